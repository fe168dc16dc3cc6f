"""Directory snapshots for the apply_patch fixture comparisons."""

from __future__ import annotations

from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures" / "apply_patch" / "scenarios"
"""A byte-exact copy of the shared codex scenarios (see its README.md)."""


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every directory (``None``) and regular file (its bytes) under ``root``, by relative path."""
    if not root.exists():
        return {}
    state: dict[str, bytes | None] = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root).as_posix()
        state[relative] = None if path.is_dir() else path.read_bytes()
    return state


def scenario_names() -> list[str]:
    """Names of the scenario folders that hold a patch."""
    return sorted(p.parent.name for p in FIXTURES.glob("*/patch.txt"))


PARTIAL_SCENARIOS = frozenset({"015_failure_after_partial_success_leaves_changes"})
"""Scenarios that record codex's standalone binary writing hunk by hunk: runners apply
them with the explicit partial mode (codeloop's default is all or nothing)."""
