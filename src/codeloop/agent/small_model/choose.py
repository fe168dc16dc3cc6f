"""Choosing among candidate changes by the checks found in the workspace (issue 33).

The order, best first:

1. a candidate with at least one passing check that exercises its change before any without
   one (a change no check exercises, the empty change included, never beats one that passed);
2. one whose exercising checks all passed before one with a failure;
3. more exercising checks passed;
4. a change before no change (where no check speaks, doing nothing does not win either);
5. agreement: more other candidates made the very same change (equal texts for equal paths);
6. the greedy draft (index 0), then the earlier sample.

Nothing here reads the task or the model's words: only the changes and what the checks said.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from codeloop.agent.small_model.checks import CheckResult


@dataclass(frozen=True, slots=True)
class Candidate:
    """One drafted change and what its checks said."""

    index: int
    """0 for the greedy draft, then the samples in the order drawn."""
    changes: Mapping[str, str | None]
    """Path → its new text (None: deleted); only the paths it changes."""
    results: tuple[CheckResult, ...] = ()

    @property
    def passed(self) -> int:
        """Exercising checks passed."""
        return sum(r.passed for r in self.results if r.check.exercises)

    @property
    def failed(self) -> int:
        """Exercising checks failed."""
        return sum(not r.passed for r in self.results if r.check.exercises)


def _agreement(candidate: Candidate, all_candidates: Sequence[Candidate]) -> int:
    same = dict(candidate.changes)
    return sum(dict(other.changes) == same for other in all_candidates if other is not candidate)


def rank(candidates: Sequence[Candidate]) -> list[Candidate]:
    """``candidates`` best first (module docstring)."""
    def key(c: Candidate) -> tuple[bool, bool, int, bool, int, bool, int]:
        return (c.passed > 0, c.failed == 0, c.passed, bool(c.changes), _agreement(c, candidates), c.index == 0,
                -c.index)

    return sorted(candidates, key=key, reverse=True)


def choose(candidates: Sequence[Candidate]) -> Candidate | None:
    """The best of ``candidates`` (None when there are none). Whether it was checked at all is
    its ``passed``: the caller says so when it is 0."""
    ranked = rank(candidates)
    return ranked[0] if ranked else None
