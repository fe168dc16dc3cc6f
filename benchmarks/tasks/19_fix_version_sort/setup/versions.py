"""Pick release versions ("MAJOR.MINOR.PATCH") for the update checker."""


def sort_versions(versions):
    """The versions from oldest to newest."""
    return sorted(versions)


def latest(versions):
    """The newest version, or None for an empty list."""
    ordered = sort_versions(versions)
    return ordered[-1] if ordered else None


def is_newer(candidate, current):
    return latest([candidate, current]) == candidate and candidate != current
