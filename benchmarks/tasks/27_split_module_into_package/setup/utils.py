"""Helpers used all over the project."""

import re

# --- strings -----------------------------------------------------------------


def slugify(text):
    return "-".join(re.findall(r"[a-z0-9]+", text.lower()))


def truncate(text, width):
    return text if len(text) <= width else text[: width - 1] + "…"


# --- numbers -----------------------------------------------------------------


def clamp(value, low, high):
    return max(low, min(high, value))


def percent(part, whole):
    return 0.0 if whole == 0 else round(100 * part / whole, 1)
