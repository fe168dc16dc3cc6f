"""Count things in text files."""

__version__ = "2.0.0"
