def last_n(values, n):
    """Return the last n values of the list, in order."""
    return values[len(values) - n + 1:]
