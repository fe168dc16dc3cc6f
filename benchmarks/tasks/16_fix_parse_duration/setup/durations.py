"""Parse human durations such as "1h30m" or "45s" into seconds."""

import re

UNITS = {"h": 3600, "m": 60, "s": 1}


def parse_duration(text):
    """Seconds in a duration written as hours, minutes and seconds: "2h5m7s" -> 7507."""
    parts = re.findall(r"(\d)([hms])", text.strip().lower())
    if not parts:
        raise ValueError(f"not a duration: {text!r}")
    return sum(int(number) * UNITS[unit] for number, unit in parts)


def format_duration(seconds):
    """7507 -> "2h5m7s"; units that are zero are left out (0 -> "0s")."""
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    out = (f"{hours}h" if hours else "") + (f"{minutes}m" if minutes else "") + (f"{secs}s" if secs else "")
    return out or "0s"
