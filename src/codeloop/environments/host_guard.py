"""What the host runs stays out of a sandboxed command's reach (issue 32).

A command in ``workspace-write`` may change the workspace, and some files there are
programs or settings the *host* runs later, outside any sandbox: git's configuration and
hooks (``git status`` runs ``core.fsmonitor``, ``git commit`` runs hooks), ``.envrc``
(direnv), editor and dev-container settings, codeloop's own ``.codeloop/``. This module
keeps them as they were, in two parts:

**Mounts** (:func:`guard_mounts`, before each command): every git directory found in the
workspace (the checkout's ``.git``, ``.git/modules/**`` and ``.git/worktrees/*``, nested
repositories, bare-looking ones) is bound onto itself, so it cannot be renamed, replaced
or removed (``rename`` and ``rmdir`` of a mount point fail with EBUSY); its ``config``,
``config.worktree``, ``commondir``, ``hooks/`` and ``info/`` are bound read-only, and so is
every hooks directory the configuration names (``core.hooksPath``) inside the workspace,
and a ``.git`` file (a submodule's or worktree's pointer). ``.envrc``, ``.vscode/``,
``.idea/``, ``.devcontainer/`` and ``.codeloop/`` are read-only; an absent one of the
directories is covered by an empty read-only tmpfs (its mount point, an empty directory, is
removed again after the command: git does not see empty directories).

**A check after each command** (:func:`settle`): what a mount cannot cover is what did not
exist yet. A repository created during the session (``git init sub``, a ``.git`` file or
link pointing somewhere new, a new ``.git/modules/X``), a ``commondir`` or
``config.worktree`` added to a known git directory, a hooks directory the configuration
names that was created, an ``.envrc`` that was created, a rebase left in progress with
``exec`` lines in its todo list: each is moved aside (renamed to
``NAME.codeloop-quarantined``) when it could make the host's git or shell run a program,
and the command's output says so. A repository created in the session may hold only the
configuration keys of :data:`SAFE_NEW_KEYS` (what ``git init``, ``clone``, ``remote add``,
``submodule add`` and ``config user.*`` write) and no hooks but git's ``*.sample`` files.
A background job's changes are checked before the next command and when the session ends.

Not covered (docs/security.md): Makefiles, package scripts, tests and every other file of
the project; they are the work itself, and running them is the user's decision.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import stat
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field

from codeloop.environments.resolver import is_within

PROTECTED_NAMES: tuple[str, ...] = (".git", ".envrc", ".vscode", ".idea", ".devcontainer", ".codeloop")
"""Top-level entries of the workspace that the host runs or reads settings from."""

PROTECTED_DIRS: tuple[str, ...] = (".vscode", ".idea", ".devcontainer", ".codeloop")
"""The ones that are directories: covered by a read-only tmpfs when absent."""

QUARANTINE_SUFFIX = ".codeloop-quarantined"

GIT_DIR_ITEMS: tuple[str, ...] = ("config", "config.worktree", "commondir", "hooks", "info")
"""What a git directory holds that makes git run programs or find another configuration."""

SAFE_NEW_KEYS: tuple[str, ...] = (
    "core.repositoryformatversion", "core.filemode", "core.bare", "core.logallrefupdates", "core.ignorecase",
    "core.precomposeunicode", "core.symlinks", "core.autocrlf", "core.eol", "core.safecrlf", "core.worktree",
    "core.sparsecheckout", "core.sparsecheckoutcone", "extensions.objectformat", "init.defaultbranch",
    "user.name", "user.email", "remote.*.url", "remote.*.pushurl", "remote.*.fetch", "remote.*.tagopt",
    "remote.*.mirror", "remote.*.prune", "branch.*.remote", "branch.*.merge", "branch.*.rebase",
    "submodule.*.url", "submodule.*.active", "submodule.*.branch", "pull.rebase", "pull.ff", "push.default",
    "advice.*", "color.*", "gc.auto", "commit.gpgsign", "tag.gpgsign", "clone.defaultremotename",
)
"""Configuration keys a git directory created during a session may hold (fnmatch, git's
lower-case names). Fail-closed: any other key (``core.fsmonitor``, ``core.hooksPath``,
``core.sshCommand``, ``diff.*.textconv``, ``filter.*``, ``alias.*``, ``include.path``...)
gets the repository moved aside."""

_SAFE_NEW = [pattern.lower() for pattern in SAFE_NEW_KEYS]

REBASE_TODO = "rebase-merge/git-rebase-todo"
"""An interactive rebase's list: its ``exec`` lines run when the user types ``git rebase
--continue``, which ``git status`` suggests. Checked, not mounted (a rebase in the sandbox
writes it)."""

Stamp = tuple[int, int, int, int] | None
"""(inode, size, mtime ns, mode) of an entry, None when absent."""


def _stamp(path: str) -> Stamp:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_mode)


def _dir_stamp(path: str) -> tuple[Stamp, tuple[tuple[str, Stamp], ...]]:
    """A directory's stamp and its entries' (a hook added to it changes this)."""
    own = _stamp(path)
    if own is None or not stat.S_ISDIR(own[3]):
        return own, ()
    try:
        names = sorted(os.listdir(path))
    except OSError:
        return own, ()
    return own, tuple((name, _stamp(os.path.join(path, name))) for name in names)


@dataclass(frozen=True)
class GitDir:
    """A directory git would use as a repository, with the stamps of what matters in it."""

    path: str
    worktree: str | None
    """The directory a relative ``core.hooksPath`` is taken from (None: not known)."""
    stamps: tuple[tuple[str, object], ...]


@dataclass
class GuardState:
    """What :func:`scan` found: the workspace's git directories, ``.git`` entries, hooks
    directories and protected top-level names."""

    git_dirs: dict[str, GitDir] = field(default_factory=dict)
    entries: dict[str, tuple[Stamp, str | None]] = field(default_factory=dict)
    """``.git`` files and links: stamp and where they point (absolute), by path."""
    hook_dirs: dict[str, object] = field(default_factory=dict)
    """Hooks directories named by ``core.hooksPath`` inside the workspace: their stamps."""
    top: dict[str, Stamp] = field(default_factory=dict)


def _is_git_dir(path: str, names: Iterable[str]) -> bool:
    """git's own test (``is_git_directory``): HEAD, objects/ and refs/ (or a commondir)."""
    present = set(names)
    if "HEAD" not in present:
        return False
    return ("objects" in present and "refs" in present) or "commondir" in present


def _git_dir(path: str, worktree: str | None) -> GitDir:
    stamps: list[tuple[str, object]] = []
    for item in (*GIT_DIR_ITEMS, REBASE_TODO):
        full = os.path.join(path, item)
        stamps.append((item, _dir_stamp(full) if item == "hooks" else _stamp(full)))
    return GitDir(path, worktree, tuple(stamps))


def _gitfile_target(path: str) -> str | None:
    """Where a ``.git`` file or link points (absolute), or None."""
    try:
        if os.path.islink(path):
            return os.path.realpath(path)
        with open(path, "rb") as f:
            head = f.read(4096).decode("utf-8", "replace")
    except OSError:
        return None
    if not head.startswith("gitdir:"):
        return None
    return os.path.realpath(os.path.join(os.path.dirname(path), head[len("gitdir:"):].strip()))


def _inner_git_dirs(dot_git: str, found: dict[str, GitDir]) -> None:
    """``modules/**`` and ``worktrees/*`` of a git directory: repositories of submodules and
    linked worktrees that git reaches from ``.git`` files."""
    stack = [os.path.join(dot_git, "modules"), os.path.join(dot_git, "worktrees")]
    while stack:
        directory = stack.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            if not entry.is_dir(follow_symlinks=False):
                continue
            try:
                names = os.listdir(entry.path)
            except OSError:
                continue
            if _is_git_dir(entry.path, names):
                found[entry.path] = _git_dir(entry.path, None)
                stack.append(os.path.join(entry.path, "modules"))
            else:
                stack.append(entry.path)  # modules of a nested name: modules/a/b


def scan(workspace: str, hooks_path: str | None = None) -> GuardState:
    """Every git directory and ``.git`` entry in ``workspace`` (links are not followed;
    the insides of ``.git`` directories are skipped but for ``modules`` and ``worktrees``).

    ``hooks_path``: ``core.hooksPath`` of the user's own (global/system) configuration."""
    state = GuardState()
    for name in PROTECTED_NAMES:
        state.top[name] = _stamp(os.path.join(workspace, name))
    stack = [workspace]
    while stack:
        directory = stack.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        names = [e.name for e in entries]
        if directory != workspace and _is_git_dir(directory, names):
            state.git_dirs[directory] = _git_dir(directory, None)
        for entry in entries:
            if entry.name == ".git":
                if entry.is_dir(follow_symlinks=False):
                    state.git_dirs[entry.path] = _git_dir(entry.path, directory)
                    _inner_git_dirs(entry.path, state.git_dirs)
                else:
                    state.entries[entry.path] = (_stamp(entry.path), _gitfile_target(entry.path))
                continue
            if entry.is_dir(follow_symlinks=False):
                stack.append(entry.path)
    for git_dir in list(state.git_dirs.values()):
        for hooks in _hook_dirs(git_dir, hooks_path):
            if is_within(hooks, workspace) and hooks != workspace:
                state.hook_dirs[hooks] = _dir_stamp(hooks)
    return state


def _git_env() -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null", "HOME": "/nonexistent", "LC_ALL": "C"}


def config_keys(path: str) -> list[tuple[str, str]] | None:
    """The (key, value) pairs of a git configuration file, read by git itself (no includes,
    nothing run); None when git cannot read it (treated as unsafe). Cached by the file's
    stamp: each command scans every git directory twice, and a git process costs ms."""
    stamp = _stamp(path)
    if stamp is None:
        return []
    found = _config_keys(path, stamp)
    return None if found is None else list(found)


@functools.lru_cache(maxsize=256)
def _config_keys(path: str, stamp: Stamp) -> tuple[tuple[str, str], ...] | None:
    try:
        done = subprocess.run(["git", "config", "--file", path, "--no-includes", "--null", "--list"],
                              capture_output=True, cwd="/", env=_git_env(), timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    pairs: list[tuple[str, str]] = []
    for item in done.stdout.decode("utf-8", "replace").split("\0"):
        if item:
            key, _, value = item.partition("\n")
            pairs.append((key, value))
    return tuple(pairs)


def user_hooks_path() -> str | None:
    """``core.hooksPath`` of the user's global and system configuration (None when unset)."""
    try:
        done = subprocess.run(["git", "config", "--get", "core.hooksPath"], capture_output=True, cwd="/",
                              env={**os.environ, "GIT_DIR": "/nonexistent"}, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    value = done.stdout.decode("utf-8", "replace").strip()
    return value or None


def _hook_dirs(git_dir: GitDir, user_hooks: str | None) -> list[str]:
    """The hooks directories git would use for ``git_dir`` besides its own ``hooks/``."""
    values = [value for key, value in (config_keys(os.path.join(git_dir.path, "config")) or [])
              if key == "core.hookspath"]
    if user_hooks is not None and not values:
        values = [user_hooks]
    found: list[str] = []
    for value in values:
        value = os.path.expanduser(value)
        if not os.path.isabs(value):
            if git_dir.worktree is None:
                continue
            value = os.path.join(git_dir.worktree, value)
        found.append(os.path.realpath(value))
    return found


def guard_mounts(workspace: str, state: GuardState) -> tuple[list[str], list[str]]:
    """bubblewrap arguments (after the workspace's read-write bind) that keep what the host
    runs read-only, and the placeholder directories they create (to remove afterwards)."""
    args: list[str] = []
    for path in sorted(state.git_dirs, key=len):  # outer repositories before inner ones
        if os.path.islink(path):
            continue
        args += ["--bind", path, path]
        for item in GIT_DIR_ITEMS:
            full = os.path.join(path, item)
            if os.path.lexists(full) and not os.path.islink(full):
                args += ["--ro-bind", full, full]
        modules = os.path.join(path, "modules")
        if os.path.isdir(modules) and not os.path.islink(modules):
            args += ["--bind", modules, modules]
    for path in state.entries:
        if os.path.isfile(path) and not os.path.islink(path):
            args += ["--ro-bind", path, path]
    for path in state.hook_dirs:
        if os.path.isdir(path) and not os.path.islink(path):
            args += ["--ro-bind", path, path]
    placeholders: list[str] = []
    for name in PROTECTED_NAMES:
        if name == ".git":
            continue
        full = os.path.join(workspace, name)
        if os.path.islink(full):
            continue  # a link is not followed by the host's tools either; the check sees a change
        if os.path.lexists(full):
            args += ["--ro-bind", full, full]
        elif name in PROTECTED_DIRS:
            args += ["--tmpfs", full, "--remount-ro", full]
            placeholders.append(full)
    return args, placeholders


def remove_placeholders(placeholders: Iterable[str]) -> None:
    """Remove the empty directories bubblewrap made as mount points (not a filled one:
    codeloop itself may have written ``.codeloop/approvals.toml`` meanwhile)."""
    for path in placeholders:
        try:
            os.rmdir(path)
        except OSError:
            pass


def _unsafe_keys(path: str) -> list[str] | None:
    """Keys of a configuration file outside :data:`SAFE_NEW_KEYS` (None: no such file)."""
    if not os.path.lexists(path):
        return None
    if os.path.islink(path) or not os.path.isfile(path):
        return ["(not a regular file)"]
    pairs = config_keys(path)
    if pairs is None:
        return ["(unreadable configuration)"]
    return sorted({key for key, _ in pairs if not any(fnmatch.fnmatchcase(key, p) for p in _SAFE_NEW)})


def _planted_hooks(path: str) -> list[str]:
    try:
        names = os.listdir(path)
    except OSError:
        return [] if not os.path.lexists(path) else ["(not a directory)"]
    return sorted(n for n in names if not n.endswith(".sample"))


def _todo_execs(path: str) -> bool:
    """True when a rebase todo list holds an ``exec``/``x`` line."""
    try:
        with open(path, "rb") as f:
            text = f.read(1 << 20).decode("utf-8", "replace")
    except OSError:
        return False
    return any(line.split(None, 1)[:1] in (["exec"], ["x"]) for line in text.splitlines())


def _danger_of_new(git_dir: str) -> str | None:
    """Why a git directory created during the session could run a program on the host."""
    for item in ("config", "config.worktree"):
        unsafe = _unsafe_keys(os.path.join(git_dir, item))
        if unsafe:
            return f"its {item} sets {', '.join(unsafe[:5])}"
    hooks = _planted_hooks(os.path.join(git_dir, "hooks"))
    if hooks:
        return f"it has hooks {', '.join(hooks[:5])}"
    if _todo_execs(os.path.join(git_dir, REBASE_TODO)):
        return "its rebase in progress has exec lines"
    return None


def _commondir_target(git_dir: str) -> str | None:
    try:
        with open(os.path.join(git_dir, "commondir"), "rb") as f:
            text = f.read(4096).decode("utf-8", "replace").strip()
    except OSError:
        return None
    return os.path.realpath(os.path.join(git_dir, text))


def _quarantine(workspace: str, path: str) -> str | None:
    """Rename ``path`` to ``path.codeloop-quarantined[-N]`` without following a link in its
    parent; the new name, or None when it could not be moved."""
    parent, name = os.path.split(path)
    try:
        fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        if not is_within(os.path.realpath(f"/proc/self/fd/{fd}"), workspace):
            return None
        for n in range(100):
            new = f"{name}{QUARANTINE_SUFFIX}" + (f"-{n}" if n else "")
            try:
                os.stat(new, dir_fd=fd, follow_symlinks=False)
                continue
            except FileNotFoundError:
                pass
            try:
                os.rename(name, new, src_dir_fd=fd, dst_dir_fd=fd)
            except OSError:
                return None
            return os.path.join(parent, new)
        return None
    finally:
        os.close(fd)


def settle(workspace: str, before: GuardState, after: GuardState) -> list[str]:
    """Move aside what a command (or a background job) left that the host would run:
    ``before`` was scanned before it ran, ``after`` since. One line per thing moved."""
    notes: list[str] = []

    def move(path: str, why: str) -> None:
        new = _quarantine(workspace, path)
        rel = os.path.relpath(path, workspace)
        if new is None:
            notes.append(f"codeloop: {rel} could run a program on the host ({why}) and could not be moved "
                         "aside; check it before running git here")
        else:
            notes.append(f"codeloop: moved {rel} aside to {os.path.relpath(new, workspace)}: {why} (a sandboxed "
                         "command may not plant what the host runs)")

    moved: set[str] = set()
    new_dirs = [path for path in after.git_dirs if path not in before.git_dirs]
    for path in new_dirs:
        why = _danger_of_new(path)
        if why is not None:
            move(path, f"{why}, which git on the host would run")
            moved.add(path)
    # A commondir (a linked worktree's, a submodule's) may point only to a repository that
    # was checked and kept; repeated, as moving one may orphan another.
    while True:
        kept = set(after.git_dirs) - moved
        orphans = [p for p in new_dirs if p not in moved and os.path.lexists(os.path.join(p, "commondir"))
                   and _commondir_target(p) not in kept]
        if not orphans:
            break
        for path in orphans:
            move(path, "its commondir points to a repository that was not there before or was moved aside")
            moved.add(path)
    for path, git_dir in after.git_dirs.items():
        old = before.git_dirs.get(path)
        if old is None:
            continue
        changed = {item for (item, s), (_, t) in zip(old.stamps, git_dir.stamps, strict=True) if s != t}
        for item in sorted(changed):
            full = os.path.join(path, item)
            if not os.path.lexists(full):
                continue
            if item == "hooks":
                planted = _planted_hooks(full)
                if planted:
                    move(full, f"hooks {', '.join(planted[:5])} were added, which git on the host would run")
            elif item == "commondir":
                move(full, "it points git on the host to another configuration")
            elif item == "info":
                continue  # read-only where it existed; its files name no program
            elif item == REBASE_TODO:
                if _todo_execs(full):
                    move(os.path.dirname(full), "its todo list has exec lines, which git rebase --continue "
                         "on the host would run")
            else:
                unsafe = _unsafe_keys(full)
                if unsafe:
                    move(full, f"it sets {', '.join(unsafe[:5])}, which git on the host would run")
    safe_dirs = set(after.git_dirs) - moved
    for path, (stamp, target) in after.entries.items():
        if before.entries.get(path) == (stamp, target):
            continue
        if target is None or target not in safe_dirs:
            move(path, "it points git on the host to a repository that was not there before or was moved aside")
    for path, listing in after.hook_dirs.items():
        if before.hook_dirs.get(path) != listing and os.path.isdir(path):
            planted = _planted_hooks(path)
            if planted:
                move(path, f"it is a hooks directory (core.hooksPath) and hooks {', '.join(planted[:5])} "
                     "were added, which git on the host would run")
    envrc = os.path.join(workspace, ".envrc")
    if before.top.get(".envrc") != after.top.get(".envrc") and os.path.lexists(envrc):
        move(envrc, "direnv on the host would load it")
    return notes
