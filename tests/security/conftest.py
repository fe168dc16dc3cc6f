"""Fixtures shared with the environment tests (importing them fails loudly without bwrap)."""

from environments.test_sandbox import workspace

__all__ = ["workspace"]
