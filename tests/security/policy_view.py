"""What a policy reported for a line, as the differential harness compares it (issue 31).

:func:`seen_by_current` reads today's :func:`codeloop.policy.judge_line`; :func:`seen_by_module`
reads an older policy package that has only ``split_commands`` and ``evaluate_command``
(``tests/security/rediscover.py`` loads 51cb17f's that way): every command it found with its
argv and every argument or redirection target, taken from the workspace root.
"""

from __future__ import annotations

import posixpath
from types import ModuleType

from codeloop.policy import Policy, judge_line
from security.bash_harness import Seen  # tests/ is on sys.path (rootdir packages)


def seen_by_current(line: str, policy: Policy) -> Seen:
    j = judge_line(line, policy.shell, policy.network)
    commands = tuple((c.argv, frozenset(c.dynamic_args) | frozenset(c.glob_args) | ({0} if c.dynamic else set()))
                     for c in j.commands)
    paths = frozenset(p.resolved for p in j.paths if p.resolved)
    globs = tuple(p.resolved for p in j.paths if p.resolved and any(ch in p.word for ch in "*?["))
    return Seen(j.decision.action == "allow", commands, paths, globs)


def seen_by_module(line: str, policy: object, shell: ModuleType, parse: ModuleType) -> Seen:
    """``shell``/``parse``: an older ``codeloop.policy.shell`` and ``shell_parse``."""
    decision = shell.evaluate_command(line, policy.shell, policy.network)  # type: ignore[attr-defined]
    try:
        found = parse.split_commands(line)
    except parse.ShellParseError:
        found = []
    commands = tuple((c.argv, frozenset(c.dynamic_args) | frozenset(c.glob_args) | ({0} if c.dynamic else set()))
                     for c in found)
    words = [a for c in found for a in c.argv[1:]] + [r.target for c in found for r in c.redirects]
    paths = frozenset(posixpath.normpath(w) for w in words if w and not w.startswith(("-", "/", "~")))
    return Seen(decision.action == "allow", commands, paths)
