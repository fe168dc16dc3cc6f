"""The policy sees what bash runs, proven by running bash (issue 31).

Generated lines (:mod:`security.bash_grammar`) are judged under ``standard``; each line allowed
without asking runs under real bash in a throw-away sandbox with strace
(:mod:`security.bash_harness`), and every program bash started, every protected path it touched
and any work lost must have been reported by the policy. The allow rate is asserted too: a
grammar whose lines all ask would prove nothing.

CI runs ``CODELOOP_BASH_HARNESS_EXAMPLES`` examples (default 150) with ``derandomize=True``, so
a landing is never blocked by a new random counterexample; set the variable to thousands (and
``CODELOOP_BASH_HARNESS_RANDOM=1``) to search locally, which keeps what it finds in
hypothesis's example database.
"""

from __future__ import annotations

import os
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from codeloop.policy import judge_line, preset
from codeloop.policy.paths import matches
from security.bash_grammar import Line, lines
from security.bash_harness import disagreements, make_template, parse_strace, run_traced, tools_missing
from security.policy_view import seen_by_current

STANDARD = preset("standard")
EXAMPLES = int(os.environ.get("CODELOOP_BASH_HARNESS_EXAMPLES", "150"))
RANDOM = os.environ.get("CODELOOP_BASH_HARNESS_RANDOM") == "1"
MIN_ALLOW_RATE = 0.25

pytestmark = pytest.mark.skipif(bool(tools_missing()), reason=tools_missing() or "ok")


@pytest.fixture(scope="module")
def template() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as root:
        yield make_template(Path(root))


@pytest.mark.timeout(max(300, EXAMPLES))  # a local run of thousands takes longer than the suite's limit
def test_generated_lines_the_policy_allows_do_only_what_it_reported(template: Path, tmp_path: Path) -> None:
    stats: Counter[str] = Counter()
    found: list[str] = []

    @settings(max_examples=EXAMPLES, derandomize=not RANDOM, database=None if not RANDOM else settings().database,
              deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(line=lines())
    def check(line: Line) -> None:
        stats["lines"] += 1
        seen = seen_by_current(line.text, STANDARD)
        if not seen.allowed:
            return
        stats["allowed"] += 1
        trace = run_traced(line.text, template, tmp_path)
        stats["programs"] += len(trace.programs)
        problems = disagreements(seen, trace, STANDARD.shell.protected_paths, matches)
        if problems:
            found.append(f"{line.text!r}: {problems}")

    check()
    rate = stats["allowed"] / max(stats["lines"], 1)
    print(f"\nbash harness: {stats['lines']} lines, {stats['allowed']} allowed ({rate:.0%}), "
          f"{stats['programs']} programs traced, {len(found)} disagreements")
    assert not found, "\n".join(found[:10])
    assert rate >= MIN_ALLOW_RATE, f"only {rate:.0%} of the generated lines were allowed: the run proves little"
    assert stats["programs"] > stats["allowed"] // 2, "the traced runs started almost no programs: strace saw nothing?"


def test_the_harness_sees_what_a_missed_line_does(template: Path, tmp_path: Path) -> None:
    """The oracle itself: a line run under bash shows its programs, protected paths and losses."""
    trace = run_traced("(cd .git && echo x > hooks/pre-commit); t\\\nouch d/n; git stash clear", template, tmp_path)
    assert ("hooks/pre-commit" in {p.rsplit(".git/", 1)[-1] for p, _ in trace.touched})
    assert any(argv[:1] == ["touch"] for _, argv in trace.programs)
    assert "the stash" in trace.lost
    # A policy that had reported nothing would be caught on each count.
    from security.bash_harness import Seen
    blind = Seen(True, (), frozenset())
    problems = disagreements(blind, trace, STANDARD.shell.protected_paths, matches)
    assert any("touch" in p for p in problems)
    assert any(".git/hooks/pre-commit" in p for p in problems)
    assert any("stash" in p for p in problems)
    # ...and today's policy asks about that line instead of running it.
    assert judge_line("cd .git && echo x > hooks/pre-commit", STANDARD.shell).decision.action == "ask"


def test_strace_lines_split_across_processes_are_joined() -> None:
    text = ('5 execve("/usr/bin/bash", ["bash"], 0x1 /* 1 vars */) = 0\n'
            '7 execve("/usr/bin/rm", ["rm", "-f", "a b"], 0x2 /* 1 vars */ <unfinished ...>\n'
            '8 openat(AT_FDCWD</tmp/ws/.git>, "config", O_WRONLY|O_CREAT|O_TRUNC, 0666) = 3</tmp/ws/.git/config>\n'
            '7 <... execve resumed>) = 0\n'
            '8 renameat2(AT_FDCWD</tmp/ws>, "x", AT_FDCWD</tmp/ws>, ".env", 0) = 0\n')
    trace = parse_strace(text)
    assert trace.programs == [("/usr/bin/rm", ["rm", "-f", "a b"])]
    assert (".git/config", "openat:w") in trace.touched
    assert (".env", "renameat2:w") in trace.touched
