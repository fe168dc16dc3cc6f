"""Helpers for the blog generator."""

import re
from datetime import date


def slugify(title):
    """'Hello, World!' -> 'hello-world'."""
    words = re.findall(r"[a-z0-9]+", title.lower())
    return "-".join(words)


def format_date(day):
    """date(2024, 3, 9) -> '9 March 2024'."""
    return f"{day.day} {day:%B %Y}"


if __name__ == "__main__":
    print(slugify("Hello, World!"), format_date(date(2024, 3, 9)))
