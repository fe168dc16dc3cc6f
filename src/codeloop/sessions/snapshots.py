"""Whole-workspace snapshots in git's object store (issue 35): what makes a shell call undoable.

A :class:`SnapshotStore` keeps snapshots of one workspace in a repository of codeloop's own
under the state directory (``<state>/snapshots/<digest of the workspace path>.git``, mode
0700): the workspace is its work tree and each session has its own index there, so a
snapshot is ``git add -A`` into that index plus ``git write-tree`` — git's stat cache makes an
unchanged file cost one ``lstat``, and identical content is stored once across snapshots and
sessions. The user's repository is never read or written: git skips every ``.git`` entry while
walking the work tree, and the user's ``.git`` directory, index, refs, stash and hooks stay
byte-identical (changes inside ``.git`` are therefore not undone either).

codeloop's git runs isolated from every user setting (:meth:`SnapshotStore.git_env`): no
system or global config (``GIT_CONFIG_NOSYSTEM``, ``GIT_CONFIG_GLOBAL=/dev/null``), every
inherited ``GIT_*`` variable dropped, no hooks (``core.hooksPath=/dev/null``), no line-ending
or filter conversion (``core.autocrlf=false`` and an ``info/attributes`` of ``* -text -eol
-filter ...`` that outranks the workspace's ``.gitattributes``): a CRLF file under ``* text=auto``
comes back byte for byte.

Covered: every file under the workspace, ignored files included (``git add --force``), modes
(executable bit) and symlinks. Not covered, and named in each :class:`Snapshot`'s ``skipped``:
directories named in ``exclude_dirs`` (heavy generated ones: ``.venv``, ``node_modules``,
``target``, ...), files over ``max_file_bytes``, and nested repositories (a directory holding
its own ``.git``, which git would store only as a link). Empty directories are not recorded
(git stores files); a restore removes directories it emptied.

A restore (:meth:`SnapshotStore.restore`) applies the computed change list between two
snapshots (``git diff-tree``): files the later one added are removed, deleted ones written
back, changed ones rewritten with their mode, symlinks recreated — each write and removal
through directory descriptors beneath the workspace (``environments.safe_open``), so a link
swapped in cannot send it outside.

One module over 500 lines on purpose: taking a snapshot (full or from the changed paths),
telling two apart and restoring one share the same notion of what is covered (the scan's
exclusions, the permission bits kept beside git's trees); split, each half would have to
re-derive it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from codeloop.environments.safe_open import atomic_write_beneath, parent_fd
from codeloop.sessions.state_dir import snapshots_dir

DEFAULT_EXCLUDE_DIRS: tuple[str, ...] = (
    ".venv", "venv", "node_modules", "target", "__pycache__", ".mypy_cache", ".pytest_cache",
    ".ruff_cache", ".tox", ".nox", ".gradle", ".next", ".cache",
)
"""Directory names never snapshotted (anywhere in the tree): generated, heavy, rebuildable."""

DEFAULT_MAX_FILE_BYTES = 16 * 1024 * 1024
"""Files larger than this are not snapshotted (named as skipped)."""

KEEP_DAYS = 30.0
"""Snapshots older than this are pruned (at the start of a session of the same workspace)."""
KEEP_COUNT = 5000
"""At most this many distinct snapshots are kept per workspace (the newest)."""

MAX_LISTED_PATHS = 200
"""Changed paths beyond which a snapshot scans the whole tree instead of listing them to git."""

_ATTRIBUTES = b"* -text -eol -filter -diff -merge -ident -working-tree-encoding -export-subst\n"
_CONFIG = (
    ("core.bare", "false"), ("core.autocrlf", "false"), ("core.safecrlf", "false"),
    ("core.hooksPath", "/dev/null"), ("core.fileMode", "true"), ("core.symlinks", "true"),
    ("core.ignoreCase", "false"), ("core.precomposeUnicode", "false"), ("core.quotePath", "false"),
    ("core.fsmonitor", "false"), ("core.untrackedCache", "true"), ("core.attributesFile", "/dev/null"),
    ("core.excludesFile", "/dev/null"), ("core.sparseCheckout", "false"), ("gc.auto", "0"),
    ("index.skipHash", "false"), ("feature.manyFiles", "false"), ("core.logAllRefUpdates", "false"),
    # Each snapshot rewrites only what changed of the index, not all of it (a 50,000-file
    # workspace: ~230 ms → ~70 ms for ten changed files, benchmarks/snapshot_cost.py).
    ("core.splitIndex", "true"), ("index.version", "4"),
)
_EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


class SnapshotError(Exception):
    """codeloop's git failed (missing, a full disk, a broken repository); the message says which."""


GIT_TIMEOUT_S = 600
"""A git command of a snapshot that runs longer is stopped (and the snapshot reported missing):
even 50,000 files take a few seconds; more means a tree the exclusions should cut."""

@dataclass(frozen=True)
class Skipped:
    """A path a snapshot does not cover, and why."""

    path: str
    reason: str
    """``excluded directory``, ``larger than N bytes`` or ``nested repository``."""


@dataclass(frozen=True)
class Snapshot:
    """The workspace at one moment: a git tree id in codeloop's repository."""

    tree: str
    skipped: tuple[Skipped, ...] = ()
    modes: dict[str, int] = field(default_factory=dict)
    """Permission bits of the files whose bits are not what git implies (0644, or 0755 for an
    executable): git keeps only the executable bit."""

    def permissions(self, path: str, git_mode: str) -> int:
        """The permission bits ``path`` had in this snapshot."""
        return self.modes.get(path, 0o755 if git_mode == "100755" else 0o644)

    def to_json(self) -> dict[str, object]:
        return {"tree": self.tree, "modes": {p: oct(m) for p, m in sorted(self.modes.items())},
                "skipped": [[s.path, s.reason] for s in self.skipped]}

    @classmethod
    def from_json(cls, data: dict[str, object]) -> Snapshot:
        modes = data.get("modes") or {}
        skipped = data.get("skipped") or []
        assert isinstance(modes, dict) and isinstance(skipped, list)
        return cls(str(data["tree"]), tuple(Skipped(str(p), str(r)) for p, r in skipped),
                   {str(p): int(str(m), 8) for p, m in modes.items()})


@dataclass(frozen=True)
class Change:
    """One path that differs between two snapshots, as a restore applies it."""

    path: str
    action: str
    """``create`` (absent in the older snapshot... the restore writes it), ``delete`` (the
    restore removes it), ``modify`` (content and/or mode), ``mode`` (mode only)."""
    mode: str | None = None
    """Target git mode (``100644``, ``100755``, ``120000`` symlink); None for ``delete``."""

    def describe(self) -> str:
        kind = {"100755": " (executable)", "120000": " (symlink)"}.get(self.mode or "", "")
        return f"{self.action:<6} {self.path}{kind}"


def workspace_key(workspace: Path) -> str:
    """The name of a workspace's repository: a digest of its real path."""
    return hashlib.sha256(os.fsencode(os.path.realpath(workspace))).hexdigest()[:24]


def git_available() -> bool:
    """Whether a ``git`` executable is on PATH (the engine needs it; without it checkpoints fall
    back to codeloop's own file tools)."""
    from shutil import which

    return which("git") is not None


@dataclass
class SnapshotStore:
    """Snapshots of ``workspace`` in codeloop's repository, with the index named ``index``."""

    workspace: Path
    index: str = "index"
    git_dir: Path | None = None
    exclude_dirs: tuple[str, ...] = DEFAULT_EXCLUDE_DIRS
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    _ready: bool = field(default=False, repr=False)
    _last: Snapshot | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.workspace = Path(os.path.realpath(self.workspace))
        if self.git_dir is None:
            self.git_dir = snapshots_dir() / f"{workspace_key(self.workspace)}.git"

    @property
    def repository(self) -> Path:
        assert self.git_dir is not None
        return self.git_dir

    def git_env(self) -> dict[str, str]:
        """The environment of every git codeloop runs: nothing of the user's git settings."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        env.update({
            "GIT_DIR": str(self.repository), "GIT_WORK_TREE": str(self.workspace),
            "GIT_INDEX_FILE": str(self.repository / self.index),
            "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_ATTR_NOSYSTEM": "1",
            "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C",
            "GIT_AUTHOR_NAME": "codeloop", "GIT_AUTHOR_EMAIL": "codeloop@localhost",
            "GIT_COMMITTER_NAME": "codeloop", "GIT_COMMITTER_EMAIL": "codeloop@localhost",
        })
        return env

    def _git(self, *args: str, input: bytes | None = None) -> bytes:
        env = self.git_env()
        if args[0] == "init":  # git refuses a work tree before the repository exists
            del env["GIT_WORK_TREE"], env["GIT_DIR"]
        try:
            done = subprocess.run(["git", *args], input=input, capture_output=True, env=env,
                                  cwd=self.workspace, check=False, timeout=GIT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise SnapshotError(f"git {args[0]} took over {GIT_TIMEOUT_S} s in {self.repository}; the snapshot "
                                "was not taken (exclude large generated directories in [snapshots])") from None
        except OSError as exc:
            raise SnapshotError(f"cannot run git ({exc.strerror or exc}); snapshots need git on PATH") from None
        if done.returncode != 0:
            said = "; ".join(line.strip() for line in done.stderr.decode("utf-8", "replace").splitlines()
                             if line.strip())[-400:]
            raise SnapshotError(f"git {args[0]} failed in {self.repository}: {said or f'exit {done.returncode}'}")
        return done.stdout

    def ensure(self) -> None:
        """Create codeloop's repository (mode 0700) with its isolating config, once."""
        if self._ready:
            return
        repo = self.repository
        if not (repo / "HEAD").is_file():
            # Made whole beside, then renamed into place: a repository cut short (a full
            # disk) without its isolating config must never be used.
            repo.parent.mkdir(parents=True, exist_ok=True)
            fresh = Path(tempfile.mkdtemp(prefix=".new-", dir=repo.parent))
            try:
                self._init(fresh)
                if repo.is_dir() and not (repo / "HEAD").exists():
                    shutil.rmtree(repo)  # one cut short before this rule: ours, and unusable
                os.rename(fresh, repo)
            except OSError as exc:
                if not (repo / "HEAD").is_file():  # not another session's, made meanwhile
                    raise SnapshotError(f"cannot create {repo}: {exc.strerror or exc}") from None
            finally:
                shutil.rmtree(fresh, ignore_errors=True)
        index = repo / self.index
        if not index.exists():
            # A new session starts from the newest index of the workspace: git trusts its stat
            # data for unchanged files, so the first snapshot does not hash the whole tree.
            others = sorted((p for p in repo.glob("index*") if not p.name.endswith(".lock")),
                            key=lambda p: p.stat().st_mtime)
            if others:
                shutil.copyfile(others[-1], index)
        self._ready = True

    def _init(self, repo: Path) -> None:
        os.chmod(repo, 0o700)
        self._git("init", "--quiet", "--bare", "--template=", str(repo))
        for key, value in _CONFIG:
            self._git("--git-dir", str(repo), "config", key, value)
        (repo / "info").mkdir(exist_ok=True)
        (repo / "info" / "attributes").write_bytes(_ATTRIBUTES)
        (repo / "info" / "exclude").write_bytes(b"")

    def scan(self, under: str = "") -> tuple[list[Skipped], dict[str, int]]:
        """Walk the workspace (or the directory ``under`` of it) for what a snapshot must leave
        out and the permission bits git does not keep (no content is read)."""
        skipped: list[Skipped] = []
        modes: dict[str, int] = {}
        excluded = set(self.exclude_dirs)
        own = self._own_state()
        stack = [under + "/" if under else ""]
        while stack:
            rel = stack.pop()
            try:
                entries = os.scandir(self.workspace / rel if rel else self.workspace)
            except OSError:
                continue
            with entries:
                for entry in entries:
                    path = f"{rel}{entry.name}"
                    if entry.name == ".git":
                        continue
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            if path in own:
                                skipped.append(Skipped(path, "codeloop's state directory"))
                            elif entry.name in excluded:
                                skipped.append(Skipped(path, "excluded directory"))
                            elif os.path.lexists(os.path.join(entry.path, ".git")):
                                skipped.append(Skipped(path, "nested repository"))
                            else:
                                stack.append(path + "/")
                        elif entry.is_file(follow_symlinks=False):
                            self._file(path, entry.stat(follow_symlinks=False), skipped, modes)
                    except OSError:
                        continue
        return sorted(skipped, key=lambda s: s.path), modes

    def _file(self, rel: str, st: os.stat_result, skipped: list[Skipped], modes: dict[str, int]) -> None:
        """Note a regular file as too large to cover, or its permission bits if git would lose them."""
        if st.st_size > self.max_file_bytes:
            skipped.append(Skipped(rel, f"larger than {self.max_file_bytes} bytes"))
            return
        bits = stat.S_IMODE(st.st_mode)
        if bits != (0o755 if bits & 0o100 else 0o644):
            modes[rel] = bits

    def _own_state(self) -> set[str]:
        """codeloop's own state (logs, this repository) when it lies inside the workspace:
        snapshotting it would record every snapshot in the next one."""
        own = set()
        for place in (self.repository.parent.parent, self.repository):
            rel = os.path.relpath(os.path.realpath(place), self.workspace)
            if rel != "." and not rel.startswith(".."):
                own.add(rel.replace(os.sep, "/"))
        return own

    def snapshot(self, changed: set[str] | None = None) -> Snapshot:
        """The workspace now, stored. ``changed``: the absolute paths changed since this
        store's last snapshot (a :class:`~codeloop.sessions.watch.ChangeWatcher`'s answer);
        None scans the whole workspace (cost: one ``lstat`` per unchanged file, a hash per
        changed one). With nothing changed no git runs at all."""
        self.ensure()
        if changed is not None and self._last is not None:
            rels = self._relevant(changed)
            # Past a few hundred paths git's matching of one pathspec per path costs more
            # than its own walk of the tree (benchmarks/snapshot_cost.py).
            if rels is not None and len(rels) <= MAX_LISTED_PATHS:
                self._last = self._update(self._last, rels)
                return self._last
        skipped, modes = self.scan()
        self._add([":(top)"], skipped)
        tree = self._git("write-tree").decode().strip()
        self._last = Snapshot(tree, tuple(skipped), modes)
        return self._last

    def _existing(self, rel: str) -> str:
        """A pathspec git accepts for ``rel``: itself when it exists, else its nearest existing
        directory (a path created and deleted since the last snapshot matches nothing, and
        git refuses a pathspec that matches nothing; one in the index still matches)."""
        while rel and not os.path.lexists(self.workspace / rel):
            rel = rel.rpartition("/")[0]
        return f":(top,literal){rel}" if rel else ":(top)"

    def _add(self, specs: list[str], skipped: list[Skipped], drop: list[Skipped] | None = None) -> None:
        if specs:
            self._git("add", "--all", "--force", "--ignore-errors", "--pathspec-from-file=-", "--pathspec-file-nul",
                      input=_nul(specs + [f":(top,literal,exclude){s.path}" for s in skipped]))
        drop = skipped if drop is None else drop
        if drop:  # an entry from an earlier snapshot that is excluded now must not linger
            self._git("rm", "--cached", "-r", "-q", "--ignore-unmatch", "--pathspec-from-file=-",
                      "--pathspec-file-nul", input=_nul(f":(top,literal){s.path}" for s in drop))

    def _relevant(self, changed: set[str]) -> set[str] | None:
        """The workspace-relative paths of ``changed`` a snapshot covers; None when only a
        full scan can tell (a nested repository may have appeared)."""
        excluded = set(self.exclude_dirs)
        own = self._own_state()
        rels: set[str] = set()
        for path in changed:
            rel = os.path.relpath(path, self.workspace)
            if rel == "." or rel == ".." or rel.startswith("../"):
                continue
            parts = rel.split(os.sep)
            if ".git" in parts:
                if parts[0] == ".git":
                    continue  # the user's repository: not covered
                return None
            if any("/".join(parts[:n]) in own for n in range(1, len(parts) + 1)):
                continue
            heavy = next((n for n, p in enumerate(parts) if p in excluded), None)
            if heavy is not None:  # only whether the excluded directory is there matters
                parts = parts[:heavy + 1]
            rels.add("/".join(parts))
        return rels

    def _update(self, last: Snapshot, rels: set[str]) -> Snapshot:
        """``last`` with the paths ``rels`` taken again from the workspace."""
        if not rels:
            return last
        inside = tuple(rels)

        def affected(path: str) -> bool:
            return path in rels or path.startswith(tuple(r + "/" for r in inside))

        skipped = [s for s in last.skipped if not affected(s.path)]
        modes = {p: m for p, m in last.modes.items() if not affected(p)}
        for rel in sorted(rels):
            try:
                st = os.lstat(self.workspace / rel)
            except OSError:
                continue  # gone: git add --all removes it from the index
            if stat.S_ISDIR(st.st_mode):
                if rel.rpartition("/")[2] in self.exclude_dirs:
                    skipped.append(Skipped(rel, "excluded directory"))
                    continue
                if os.path.lexists(self.workspace / rel / ".git"):
                    skipped.append(Skipped(rel, "nested repository"))
                    continue
                more_skipped, more_modes = self.scan(rel)
                skipped += more_skipped
                modes.update(more_modes)
            elif stat.S_ISREG(st.st_mode):
                self._file(rel, st, skipped, modes)
        left_out = tuple(s.path for s in skipped)
        specs = sorted({self._existing(r) for r in rels
                        if r not in left_out and not r.startswith(tuple(p + "/" for p in left_out))})
        self._add(specs, skipped, [s for s in skipped if affected(s.path)])
        tree = self._git("write-tree").decode().strip()
        return Snapshot(tree, tuple(sorted(skipped, key=lambda s: s.path)), modes)

    def keep(self, tree: str, name: str) -> None:
        """Keep ``tree`` from pruning, under ``refs/codeloop/<nanoseconds now>/<name>`` (the
        time in the name orders and ages the snapshots: no commit object needed)."""
        ref = f"refs/codeloop/{time.time_ns():020d}/{name}"
        if (self.repository / "reftable").exists() or not _safe_ref_name(name):
            self._git("update-ref", ref, tree)  # not the files backend (or an odd name): git writes it
            return
        # A loose ref is a file holding the id (git's files backend): written here, atomically,
        # it costs no git process, a third of what a spaces run's snapshots spent on git.
        path = self.repository / ref
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # Renamed into place, not fsynced (git does not fsync its refs either): a crash
            # loses at most this ref, and a tree without one is only pruned sooner.
            temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            temp.write_bytes(f"{tree}\n".encode())
            os.replace(temp, path)
        except OSError as exc:
            raise SnapshotError(f"cannot keep snapshot {tree[:12]} in {self.repository}: "
                                f"{exc.strerror or exc}") from None

    def changes(self, current: str, target: str) -> list[Change]:
        """What a restore from ``current`` to ``target`` does, path by path (sorted)."""
        if current == target:
            return []
        raw = self._git("diff-tree", "-r", "-z", "--no-renames", "--raw", current, target)
        fields = raw.split(b"\0")
        out: list[Change] = []
        i = 0
        while i + 1 < len(fields) and fields[i]:
            meta = fields[i].decode().lstrip(":").split()
            path = os.fsdecode(fields[i + 1])
            i += 2
            old_mode, new_mode, old_sha, new_sha, status = meta[0], meta[1], meta[2], meta[3], meta[4]
            if status == "D":
                out.append(Change(path, "delete"))
            elif status == "A":
                out.append(Change(path, "create", new_mode))
            elif old_sha == new_sha and old_mode != new_mode:
                out.append(Change(path, "mode", new_mode))
            else:
                out.append(Change(path, "modify", new_mode))
        return sorted(out, key=lambda c: c.path)

    def restore(self, current: Snapshot, target: Snapshot) -> list[Change]:
        """Make the workspace, which holds ``current``, hold ``target``; returns what changed.

        Removals first (deepest first: a directory may become a file), then writes with their
        permission bits, then the directories the removals emptied are removed."""
        changes = self.diff(current, target)
        entries = self._entries(target.tree, [c.path for c in changes if c.action != "delete"])
        blobs = self._blobs({sha for mode, sha in entries.values() if mode != "160000"})
        root = self.workspace
        emptied: set[str] = set()
        for change in sorted(changes, key=lambda c: c.path.count("/"), reverse=True):
            if change.action == "delete" or (change.action == "modify" and self._kind_differs(change)):
                self._remove(change.path)
                emptied.update(_parents(change.path))
        for change in changes:
            if change.action == "delete":
                continue
            mode, sha = entries[change.path]
            shown = change.path
            if mode == "120000":
                with parent_fd(root, root / shown, shown, create=True) as (dir_fd, name):
                    _remove_entry(dir_fd, name)
                    os.symlink(os.fsdecode(blobs[sha]), name, dir_fd=dir_fd)
            elif mode in ("100644", "100755"):
                if change.action != "mode":
                    atomic_write_beneath(root, root / shown, blobs[sha], shown)
                with parent_fd(root, root / shown, shown) as (dir_fd, name):
                    os.chmod(name, target.permissions(shown, mode), dir_fd=dir_fd, follow_symlinks=False)
        for directory in sorted(emptied, key=lambda d: d.count("/"), reverse=True):
            try:
                with parent_fd(root, root / directory, directory) as (dir_fd, name):
                    os.rmdir(name, dir_fd=dir_fd)
            except OSError:
                continue  # not empty (or gone): it holds something the target keeps
        return changes

    def diff(self, current: Snapshot, target: Snapshot) -> list[Change]:
        """:meth:`changes` plus the files whose permission bits alone differ (git keeps only
        the executable bit; the snapshots keep the rest)."""
        # A path the target did not cover (too large then, a nested repository then) is not
        # the target's to remove.
        unknown = tuple(s.path for s in target.skipped)
        below = tuple(u + "/" for u in unknown)
        changes = [c for c in self.changes(current.tree, target.tree)
                   if not (c.action == "delete" and (c.path in unknown or c.path.startswith(below)))]
        named = {c.path for c in changes}
        extra = [Change(path, "mode", "100644") for path in set(current.modes) ^ set(target.modes)
                 | {p for p in set(current.modes) & set(target.modes) if current.modes[p] != target.modes[p]}
                 if path not in named]
        if extra:  # their git mode (executable or not) is the same in both trees
            entries = self._entries(target.tree, [c.path for c in extra])
            extra = [Change(c.path, "mode", entries[c.path][0]) for c in extra if c.path in entries]
        return sorted(changes + extra, key=lambda c: c.path)

    def _kind_differs(self, change: Change) -> bool:
        """A modify whose target is a symlink or file where something of another kind is now."""
        try:
            st = os.lstat(self.workspace / change.path)
        except OSError:
            return False
        return stat.S_ISLNK(st.st_mode) != (change.mode == "120000") or stat.S_ISDIR(st.st_mode)

    def _remove(self, rel: str) -> None:
        root = self.workspace
        try:
            with parent_fd(root, root / rel, rel) as (dir_fd, name):
                _remove_entry(dir_fd, name)
        except (FileNotFoundError, NotADirectoryError):
            pass

    def _entries(self, tree: str, paths: Sequence[str]) -> dict[str, tuple[str, str]]:
        if not paths:
            return {}
        raw = self._git("ls-tree", "-r", "-z", "--full-tree", tree, "--", *[f":(literal){p}" for p in paths])
        out: dict[str, tuple[str, str]] = {}
        for record in raw.split(b"\0"):
            if record:
                meta, _, name = record.partition(b"\t")
                mode, _kind, sha = meta.decode().split()
                out[os.fsdecode(name)] = (mode, sha)
        return out

    def _blobs(self, shas: Iterable[str]) -> dict[str, bytes]:
        wanted = sorted(shas)
        if not wanted:
            return {}
        raw = self._git("cat-file", "--batch", input="".join(f"{s}\n" for s in wanted).encode())
        out: dict[str, bytes] = {}
        pos = 0
        for sha in wanted:
            end = raw.index(b"\n", pos)
            header = raw[pos:end].split()
            size = int(header[2])
            out[sha] = raw[end + 1:end + 1 + size]
            pos = end + 1 + size + 1
        return out

    def tree_paths(self, tree: str) -> set[str]:
        """Every path ``tree`` holds."""
        raw = self._git("ls-tree", "-r", "-z", "--name-only", "--full-tree", tree)
        return {os.fsdecode(p) for p in raw.split(b"\0") if p}

    def prune(self, *, max_age_days: float, max_count: int) -> int:
        """Drop kept snapshots older than ``max_age_days`` or beyond the newest ``max_count``,
        then ``git gc`` the repository; returns how many were dropped."""
        if not (self.repository / "HEAD").is_file():
            return 0
        self.ensure()
        refs = sorted((r for r in self._git("for-each-ref", "--format=%(refname)", "refs/codeloop/")
                       .decode().split("\n") if r), reverse=True)
        cutoff = time.time_ns() - int(max_age_days * 86400 * 1e9)
        doomed = [ref for n, ref in enumerate(refs) if n >= max_count or int(ref.split("/")[2]) < cutoff]
        if doomed:
            self._git("update-ref", "--stdin", input="".join(f"delete {r}\n" for r in doomed).encode())
            self._git("gc", "--quiet", "--prune=now")
        return len(doomed)


def _safe_ref_name(name: str) -> bool:
    """Whether ``name`` is a ref name git would take as it is (``git check-ref-format``'s rules,
    kept narrow: letters, digits, ``-_.`` and ``/`` between non-empty parts not starting with a dot)."""
    parts = name.split("/")
    return all(p and not p.startswith(".") and not p.endswith((".lock", ".")) and ".." not in p
               and all(c.isascii() and (c.isalnum() or c in "-_.") for c in p) for p in parts)


def _nul(items: Iterable[str]) -> bytes:
    return b"".join(os.fsencode(i) + b"\0" for i in items)


def _parents(rel: str) -> list[str]:
    parts = rel.split("/")[:-1]
    return ["/".join(parts[:n]) for n in range(1, len(parts) + 1)]


def _remove_entry(dir_fd: int, name: str) -> None:
    """Remove ``name`` from ``dir_fd``: a file or link, or a directory once emptied (the files
    of a directory a snapshot covers are removed first, deepest first; one that still holds
    something no snapshot covers is not removed, and the restore stops saying so)."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        os.rmdir(name, dir_fd=dir_fd)
    else:
        os.unlink(name, dir_fd=dir_fd)


EMPTY_TREE = _EMPTY_TREE
"""git's id of the empty tree (a workspace with nothing covered)."""
