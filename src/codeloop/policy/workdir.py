"""The directories a line's commands run in, so a path is judged where it lands.

``cd .git && echo x > hooks/pre-commit`` writes ``.git/hooks/pre-commit``, and
``/proc/self/cwd/.env`` is ``.env``. :func:`with_workdirs` gives every command of a line the
set of directories it may run in: the workspace root and each directory a ``cd``, ``pushd``
or ``env --chdir`` of the line can reach from any of them, taken in any order (a loop or a
function can run a ``cd`` before a command written earlier), ``None`` when one cannot be told
(a computed target, ``cd -``, ``popd``, a directory outside the workspace). :func:`resolve`
names the workspace path a word reaches from one of them.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from codeloop.policy.shell_parse import ParsedCommand

_PROC_LINK = re.compile(r"^/proc/[^/]+/(cwd|root)(?=/|$)/?")
_MAX_DIRS = 16
"""Most directories followed; beyond, the directory counts as unknown."""


def resolve(word: str, cwd: str | None) -> str | None:
    """The workspace-relative path ``word`` names when run in ``cwd`` (``.`` is the root), or
    None when it lies outside the workspace or cannot be told."""
    m = _PROC_LINK.match(word)
    if m:
        if m.group(1) == "root":
            return None  # /proc/self/root/x is /x: outside, judged as an absolute path
        word = word[m.end():] or "."
    if word.startswith(("/", "~")) or cwd is None:
        return None
    path = posixpath.normpath(posixpath.join(cwd, word))
    return None if path == ".." or path.startswith("../") else path


def _targets(cmd: ParsedCommand) -> list[str | None]:
    """Where ``cmd`` moves the shell (or the program it runs): literal targets, None if unknown."""
    name, args = cmd.name, list(cmd.args)
    if name in ("cd", "pushd"):
        rest = [(i, a) for i, a in enumerate(args, start=1) if not (a.startswith("-") and a != "-")]
        if rest and rest[0][1] == "--":
            rest = rest[1:]
        if not rest:
            return [None]  # cd alone goes home; pushd alone swaps with the stack
        i, target = rest[0]
        return [None] if i in cmd.dynamic_args or target == "-" or target.startswith("+") else [target]
    if name == "popd":
        return [None]
    if name == "env":
        out: list[str | None] = []
        for i, a in enumerate(args, start=1):
            if a in ("-C", "--chdir") and i < len(args):
                out.append(None if i + 1 in cmd.dynamic_args else args[i])
            elif a.startswith("--chdir=") or (a.startswith("-C") and len(a) > 2):
                out.append(a.split("=", 1)[1] if a.startswith("--") else a[2:])
        return out
    return []


def with_workdirs(commands: list[ParsedCommand]) -> list[ParsedCommand]:
    """``commands`` with ``cwds`` set: every directory each may run in (see the module docstring)."""
    targets = [t for cmd in commands for t in _targets(cmd)]
    if not targets:
        return commands
    dirs: list[str | None] = ["."]
    for _ in range(len(targets)):
        grown = False
        for target in targets:
            for cwd in list(dirs):
                new = None if target is None else resolve(target, cwd)
                if new not in dirs:
                    dirs.append(new)
                    grown = True
        if not grown or len(dirs) > _MAX_DIRS:
            break
    if len(dirs) > _MAX_DIRS and None not in dirs:
        dirs.append(None)
    cwds = tuple(dirs)
    return [replace(cmd, cwds=cwds) for cmd in commands]
