"""Small text helpers shared by the export and the report."""


def clean(value):
    """One field as text: None becomes empty, surrounding spaces go."""
    return "" if value is None else str(value).strip()


def join_fields(fields):
    """Join the cleaned fields into one line."""
    return ",".join(clean(f) for f in fields)
