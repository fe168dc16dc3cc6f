"""What the SIGKILL campaigns of issue 23 (``run``, ``spaces serve``, ``relay step``) share."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any


@dataclass
class Outcome:
    """The counts every campaign's trial reports (what each means is the campaign's to say)."""

    lost: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)
    interrupted: list[str] = field(default_factory=list)
    interrupted_mark_present: list[str] = field(default_factory=list)
    """Interrupted ones whose effect happened before the kill (exactly-once cannot cover them)."""
    problems: list[str] = field(default_factory=list)


def count_lines(path: Path) -> int:
    """Newlines in ``path`` (0 when it does not exist yet)."""
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def read_text(path: Path) -> str:
    """The text of ``path``, empty when it does not exist."""
    try:
        return path.read_text()
    except FileNotFoundError:
        return ""


def sum_trials(trial_type: type, trials: list[Any], skip: tuple[str, ...] = ()) -> dict[str, int]:
    """Each field of the dataclass ``trial_type`` summed over ``trials`` (a list counts its
    items), plus ``trials``."""
    sums: dict[str, int] = {"trials": len(trials)}
    for f in fields(trial_type):
        if f.name not in skip:
            sums[f.name] = sum(len(v) if isinstance(v, list) else int(v) for v in (getattr(t, f.name) for t in trials))
    return sums
