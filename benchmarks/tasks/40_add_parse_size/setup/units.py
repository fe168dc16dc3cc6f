"""Byte sizes for the disk-usage report."""

SUFFIXES = ["", "K", "M", "G"]


def format_size(n):
    """Bytes as a short size: 512 -> "512", 10240 -> "10K" (whole units only, else the next smaller unit)."""
    for power in range(len(SUFFIXES) - 1, 0, -1):
        unit = 1024**power
        if n >= unit and n % unit == 0:
            return f"{n // unit}{SUFFIXES[power]}"
    return str(n)
