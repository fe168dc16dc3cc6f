"""Count events in memory and print a summary (was meant for a dashboard that never came)."""

from collections import Counter

_COUNTS = Counter()


def count(event, n=1):
    _COUNTS[event] += n


def summary():
    return "metrics: " + ", ".join(f"{k}={v}" for k, v in sorted(_COUNTS.items()))
