"""Differential harness (issue 31): run a line under real bash and compare with what the policy saw.

:func:`run_traced` runs one line with ``bash -c`` inside a throw-away bubblewrap sandbox (the
file system read-only except a copy of the workspace template, no network, its own PID
namespace) under ``strace -f -y``, and returns every program started (``execve`` with its
arguments), every workspace path touched (opened, written, renamed, unlinked, linked, chmod'ed;
``-y`` prints the directory each relative path is taken from, and the path an opened file
really is) and which of the work that git keeps no copy of is gone (an uncommitted change, an
untracked file, a stash, a branch).

:func:`disagreements` is the invariant: for a line the policy allows without asking, every
program bash started and every protected path it touched must be among what the policy
reported (:class:`codeloop.policy.Judgement`), and nothing unrecoverable may be lost.

:mod:`tests.security.bash_grammar` generates the lines; ``tests/security/test_bash_differential.py``
runs it in CI; ``tests/security/rediscover.py`` runs it against an older policy.
"""

from __future__ import annotations

import codecs
import os
import posixpath
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path

WS = "/tmp/ws"
"""Where the workspace copy is mounted inside the sandbox."""
PRECIOUS_CHANGE = "an uncommitted change\n"
TIMEOUT_S = 10

_SYSCALLS = ("execve,openat,open,creat,rename,renameat,renameat2,unlink,unlinkat,rmdir,symlink,symlinkat,"
             "link,linkat,chmod,fchmodat,truncate,mkdir,mkdirat,chdir,fchdir,clone,clone3,fork,vfork")
_LINE = re.compile(r"^(\d+)\s+(\w+)\((.*)\)\s+=\s+(-?\d+|\?)(?:<([^>]*)>)?")
_STR = re.compile(r'"((?:[^"\\]|\\.)*)"')
_DIRFD = re.compile(r"^(?:AT_FDCWD|\d+)<([^>]*)>")


def tools_missing() -> str:
    """Why the harness cannot run here (``""`` when it can)."""
    for tool in ("bwrap", "strace", "bash", "git"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (scripts/system-deps installs it)"
    probe = subprocess.run(["bwrap", "--ro-bind", "/", "/", "--unshare-all", "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        return f"bwrap cannot create a sandbox here: {probe.stderr.decode(errors='replace').strip()[:200]}"
    return ""


def make_template(root: Path) -> Path:
    """A workspace: a git repository with an uncommitted change, an untracked file, a stash and a
    second branch, secrets (``.env``), a hook directory, a script for ``BASH_ENV`` to source."""
    ws = root / "template"
    ws.mkdir()
    env = {**os.environ, "HOME": str(root), "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "t",
           "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@x"}

    def git(*args: str) -> None:
        subprocess.run(["git", "-c", "init.defaultBranch=main", *args], cwd=ws, env=env, check=True,
                       capture_output=True)

    git("init", "-q")
    (ws / "tracked.txt").write_text("committed\n")
    (ws / "a.txt").write_text("a\n")
    (ws / "d").mkdir()
    (ws / "d" / "f.txt").write_text("f\n")
    (ws / "src").mkdir()
    (ws / "src" / "x.py").write_text("print(1)\n")
    (ws / "stashed.txt").write_text("v1\n")
    git("add", "-A")
    git("commit", "-qm", "one")
    git("branch", "keep")
    (ws / "stashed.txt").write_text("v2\n")
    git("stash", "-q")
    (ws / "tracked.txt").write_text(PRECIOUS_CHANGE)
    (ws / "untracked.txt").write_text("untracked\n")
    (ws / ".env").write_text("SECRET=1\n")
    (ws / "env.sh").write_text("touch d/sourced\n")
    (ws / ".git" / "hooks").mkdir(exist_ok=True)
    return ws


@dataclass
class Trace:
    """What bash did."""

    programs: list[tuple[str, list[str]]] = field(default_factory=list)
    """(executable path, argv) of every successful execve after the first (bash itself)."""
    touched: list[tuple[str, str]] = field(default_factory=list)
    """(workspace-relative path, syscall) of every successful access inside the workspace."""
    lost: list[str] = field(default_factory=list)
    """Work git keeps no copy of that is gone afterwards."""
    output: str = ""


def _unescape(raw: str) -> str:
    return codecs.escape_decode(raw.encode("latin-1", "backslashreplace"))[0].decode("utf-8", "replace")


def _relative(path: str) -> str | None:
    path = posixpath.normpath(path)
    if path == WS:
        return "."
    return path[len(WS) + 1:] if path.startswith(WS + "/") else None


def parse_strace(text: str) -> Trace:
    """Programs and workspace paths from ``strace -f -y`` output (unfinished calls joined)."""
    trace = Trace()
    pending: dict[str, str] = {}
    cwd: dict[str, str] = {}
    first_exec = True
    for raw in text.splitlines():
        m = re.match(r"^(\d+)\s+(.*)$", raw)
        if not m:
            continue
        pid, rest = m.groups()
        if rest.endswith("<unfinished ...>"):
            pending[pid] = rest[: -len("<unfinished ...>")]
            continue
        resumed = re.match(r"^<\.\.\. \w+ resumed>(.*)$", rest)
        if resumed:
            rest = pending.pop(pid, "") + resumed.group(1)
        line = _LINE.match(f"{pid} {rest}")
        if not line:
            continue
        _, call, args, ret, ret_path = line.groups()
        for fd_cwd in re.findall(r"AT_FDCWD<([^>]*)>", args):
            cwd[pid] = fd_cwd
        if call in ("clone", "clone3", "fork", "vfork") and ret.isdigit():
            cwd[ret] = cwd.get(pid, WS)
            continue
        if ret.startswith("-") or ret == "?":
            continue
        strings = [_unescape(s) for s in _STR.findall(args)]
        if call == "execve":
            if first_exec:
                first_exec = False
                continue
            argv_part = args[args.find("[") + 1: args.find("]")] if "[" in args else ""
            trace.programs.append((strings[0] if strings else "", [_unescape(s) for s in _STR.findall(argv_part)]))
            continue
        if call in ("chdir", "fchdir"):
            if strings:
                cwd[pid] = posixpath.join(cwd.get(pid, WS), strings[0])
            continue
        if call in ("openat", "open", "creat") and ret_path:
            rel = _relative(ret_path)
            if rel is not None:
                trace.touched.append((rel, call + (":w" if re.search(r"O_WRONLY|O_RDWR|O_CREAT|O_TRUNC", args)
                                                   or call == "creat" else ":r")))
            continue
        dirfds = [d.group(1) for d in re.finditer(r"(?:AT_FDCWD|\d+)<([^>]*)>", args)]
        base = dirfds[0] if dirfds else cwd.get(pid, WS)
        for s in strings if call not in ("symlink", "symlinkat") else strings[1:]:
            rel = _relative(posixpath.join(base, s))
            if rel is not None:
                trace.touched.append((rel, call + ":w"))
    return trace


def run_traced(line: str, template: Path, scratch: Path) -> Trace:
    """Run ``line`` under bash in a sandbox on a fresh copy of ``template`` (see the module docstring)."""
    ws = scratch / "ws"
    out = scratch / "trace"
    if ws.exists():
        shutil.rmtree(ws)
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(template, ws, symlinks=True)
    out.mkdir()
    argv = ["bwrap", "--ro-bind", "/", "/", "--tmpfs", "/tmp", "--bind", str(ws), WS, "--bind", str(out), "/tmp/out",
            "--dev", "/dev", "--proc", "/proc", "--unshare-all", "--die-with-parent", "--new-session",
            "--chdir", WS, "--clearenv", "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin", "--setenv", "HOME", "/tmp",
            "--setenv", "GIT_CONFIG_NOSYSTEM", "1", "--setenv", "LC_ALL", "C",
            "timeout", "-s", "KILL", str(TIMEOUT_S - 2),
            "strace", "-f", "-qq", "-y", "-s", "4096", "-o", "/tmp/out/trace", "--seccomp-bpf", "-e", f"trace={_SYSCALLS}",
            "bash", "--norc", "--noprofile", "-c", line]
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=TIMEOUT_S, check=False)
        output = done.stdout.decode(errors="replace") + done.stderr.decode(errors="replace")
    except subprocess.TimeoutExpired:
        output = "(timed out)"
    text = (out / "trace").read_text(errors="replace") if (out / "trace").exists() else ""
    trace = parse_strace(text)
    # strace's own execve of bash is the first; timeout's execve of strace comes before it.
    trace.programs = [(p, a) for p, a in trace.programs if posixpath.basename(p) not in ("strace",)]
    trace.output = output[-2000:]
    trace.lost = _lost(ws)
    return trace


def _lost(ws: Path) -> list[str]:
    lost = []
    tracked = ws / "tracked.txt"
    if not tracked.is_file() or tracked.read_text(errors="replace") != PRECIOUS_CHANGE:
        lost.append("the uncommitted change of tracked.txt")
    if not (ws / "untracked.txt").is_file():
        lost.append("the untracked file untracked.txt")
    if not (ws / ".git" / "refs" / "stash").is_file() and "refs/stash" not in _read(ws / ".git" / "packed-refs"):
        lost.append("the stash")
    if not (ws / ".git" / "refs" / "heads" / "keep").is_file() and "refs/heads/keep" not in _read(ws / ".git" / "packed-refs"):
        lost.append("the branch keep")
    return lost


def _read(path: Path) -> str:
    return path.read_text(errors="replace") if path.is_file() else ""


@dataclass(frozen=True)
class Seen:
    """What a policy reported for a line: the commands' argv (with which words it could not
    know before the run) and the workspace paths it resolved."""

    allowed: bool
    commands: tuple[tuple[tuple[str, ...], frozenset[int]], ...]
    """(argv, indexes of words decided at run time: expansions and globs)."""
    paths: frozenset[str]
    """Workspace-relative paths the policy named (resolved where it resolves them)."""
    globs: tuple[str, ...] = ()
    """Path words holding a glob, which may match several paths."""


NAMES_MATCH_RUN_TIME = frozenset({"[", "test"})


def disagreements(seen: Seen, trace: Trace, protected: tuple[str, ...],
                  protected_match: Callable[[str, tuple[str, ...]], str | None]) -> list[str]:
    """Everything bash did that ``seen`` did not report (empty when the invariant holds)."""
    if not seen.allowed:
        return []
    found: list[str] = []
    for exe, argv in trace.programs:
        name = posixpath.basename(argv[0] if argv else exe)
        base = posixpath.basename(exe)
        if _reported(seen, name, base, argv):
            continue
        found.append(f"bash started {' '.join(argv)!r} ({exe}), which the policy did not report")
    for rel, call in trace.touched:
        # Writes, renames, unlinks, links and chmods (issue 31's list): git reads its own config
        # on every run, and a read of a secret by a program shows as that program's arguments.
        if call.endswith(":w") and protected_match(rel, protected) and not _path_reported(seen, rel):
            found.append(f"{call} touched the protected path {rel!r}, which the policy did not report")
    found += [f"{what} was lost" for what in trace.lost]
    return found


def _reported(seen: Seen, name: str, base: str, argv: list[str]) -> bool:
    for cmd, dynamic in seen.commands:
        if not cmd:
            continue
        cname = posixpath.basename(cmd[0])
        if 0 in dynamic:
            return True  # the policy said it could not tell this command's name (it asks then)
        same = cname in (name, base) or (cname == "git" and base.startswith("git"))
        if not same:
            continue
        if cname == "git" and base.startswith("git") and base != "git":
            return True  # git's own helpers (git-remote-http, ...) run for git
        if dynamic or len(cmd) != len(argv):
            if dynamic:
                return True
            continue
        if list(cmd[1:]) == argv[1:]:
            return True
    return False


def _path_reported(seen: Seen, rel: str) -> bool:
    if rel in seen.paths:
        return True
    return any(fnmatchcase(rel, g) for g in seen.globs)


def run_many(lines: Iterable[str], template: Path) -> list[tuple[str, Trace]]:
    """Run each line (for scripts); each on its own fresh copy of the template."""
    with tempfile.TemporaryDirectory() as scratch:
        return [(line, run_traced(line, template, Path(scratch))) for line in lines]
