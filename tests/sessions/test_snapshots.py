"""The snapshot engine (issue 35) with real git: every byte, mode and symlink of a workspace comes
back, in a plain directory and in a git repository whose own ``.git`` stays byte-identical, with
hostile user git settings in force."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from codeloop.sessions.snapshots import SnapshotStore


def state_of(root: Path) -> dict[str, tuple[str, object]]:
    """Everything a restore must bring back: each entry's kind, permission bits and content."""
    out: dict[str, tuple[str, object]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            st = path.lstat()
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(path))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", None)
            else:
                out[rel] = ("file", (stat.S_IMODE(st.st_mode), path.read_bytes()))
    return out


def shell(cwd: Path, script: str, env: dict[str, str] | None = None) -> None:
    subprocess.run(["bash", "-ec", script], cwd=cwd, check=True, env=env, capture_output=True)


def populate(ws: Path) -> None:
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "main.py").write_bytes(b"print('hi')\n")
    (ws / "crlf.txt").write_bytes(b"one\r\ntwo\r\n")
    (ws / ".gitattributes").write_bytes(b"* text=auto eol=lf\n")
    (ws / ".gitignore").write_bytes(b".env\nbuild/\n")
    (ws / ".env").write_bytes(b"SECRET=1\n")
    (ws / "run.sh").write_bytes(b"#!/bin/sh\necho run\n")
    (ws / "run.sh").chmod(0o755)
    (ws / "link").symlink_to("src/main.py")
    (ws / "binary.bin").write_bytes(bytes(range(256)) * 4)


MUTATE = """
sed -i 's/hi/bye/' src/main.py
rm .env crlf.txt
mkdir -p build/out && echo built > build/out/a.o && echo more > build/b.o
mv run.sh scripts.sh
chmod 600 binary.bin
chmod +x src/main.py
ln -s build/b.o newlink
rm link && ln -s crlf.txt link
mkdir emptydir
"""


@pytest.fixture
def hostile_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user whose git settings would change bytes or run code: all must be ignored."""
    home = tmp_path / "home"
    hooks = home / "hooks"
    hooks.mkdir(parents=True)
    (hooks / "pre-commit").write_text("#!/bin/sh\ntouch " + str(home / "HOOK_RAN") + "\n")
    (hooks / "pre-commit").chmod(0o755)
    (home / ".gitconfig").write_text(f"[core]\n\tautocrlf = true\n\thooksPath = {hooks}\n"
                                     "\texcludesFile = /nonexistent\n[user]\n\tname = u\n\temail = u@x\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "not-this-one"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(tmp_path / "not-this-index"))
    return home


def tree_bytes(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file() and not p.is_symlink()}


@pytest.mark.parametrize("as_repo", [False, True], ids=["plain-dir", "git-repo"])
def test_restore_brings_back_every_byte_mode_and_symlink_and_leaves_dot_git_alone(
        tmp_path: Path, hostile_git: Path, as_repo: bool) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    populate(ws)
    user_git: dict[str, bytes] = {}
    if as_repo:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        shell(ws, "git init -q && git add -A && git commit -qm one && echo x >> src/main.py && git stash -q "
                  "&& git tag t1 && git branch side", env)
        user_git = tree_bytes(ws / ".git")
        (hostile_git / "HOOK_RAN").unlink()  # the user's own commit ran the user's hook
    before = state_of(ws)

    store = SnapshotStore(ws, index="index-s1")
    first = store.snapshot()
    shell(ws, MUTATE)
    after = state_of(ws)
    assert after != before
    second = store.snapshot()

    changes = store.restore(second, first)
    restored = state_of(ws)
    # Git keeps no empty directories: the one `mkdir emptydir` made stays (docs/sessions.md).
    assert {k: v for k, v in restored.items() if k != "emptydir"} == \
        {k: v for k, v in before.items() if not k.startswith(".git/") and k != ".git"} | \
        {k: v for k, v in before.items() if k == ".git" or k.startswith(".git/")}
    assert {c.path for c in changes} >= {".env", "crlf.txt", "src/main.py", "build/out/a.o", "newlink",
                                          "run.sh", "scripts.sh", "binary.bin", "link"}
    assert not (ws / "build").exists()  # the directories the removals emptied are gone
    if as_repo:
        assert tree_bytes(ws / ".git") == user_git
    assert not (hostile_git / "HOOK_RAN").exists()

    # Redo: the later snapshot comes back just as well.
    store.restore(first, second)
    assert {k: v for k, v in state_of(ws).items()} == after


def test_crlf_under_text_auto_and_ignored_files_are_stored_byte_for_byte(tmp_path: Path, hostile_git: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    populate(ws)
    store = SnapshotStore(ws)
    snap = store.snapshot()
    assert {".env", "crlf.txt", "link"} <= store.tree_paths(snap.tree)
    shell(ws, "printf 'x' > crlf.txt; rm .env")
    now = store.snapshot()
    store.restore(now, snap)
    assert (ws / "crlf.txt").read_bytes() == b"one\r\ntwo\r\n" and (ws / ".env").read_bytes() == b"SECRET=1\n"


def test_heavy_directories_large_files_and_nested_repositories_are_named_and_left_alone(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "node_modules" / "pkg").mkdir(parents=True)
    (ws / "node_modules" / "pkg" / "index.js").write_text("x")
    (ws / "sub" / ".venv").mkdir(parents=True)
    (ws / "nested").mkdir()
    shell(ws / "nested", "git init -q && echo n > n.txt")
    (ws / "big.bin").write_bytes(b"b" * 2048)
    (ws / "small.txt").write_text("s")
    store = SnapshotStore(ws, max_file_bytes=1024)
    snap = store.snapshot()
    assert [(s.path, s.reason) for s in snap.skipped] == [
        ("big.bin", "larger than 1024 bytes"), ("nested", "nested repository"),
        ("node_modules", "excluded directory"), ("sub/.venv", "excluded directory")]
    assert store.tree_paths(snap.tree) == {"small.txt"}
    shell(ws, "rm -rf node_modules/pkg big.bin small.txt nested/n.txt")
    store.restore(store.snapshot(), snap)
    assert (ws / "small.txt").read_text() == "s"
    assert not (ws / "big.bin").exists() and not (ws / "node_modules" / "pkg").exists()  # not covered


def test_the_repository_is_private_and_unchanged_snapshots_share_a_tree(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a").write_text("a")
    store = SnapshotStore(ws)
    one, two = store.snapshot(), store.snapshot()
    assert one.tree == two.tree
    assert stat.S_IMODE(store.repository.stat().st_mode) == 0o700
    assert not (ws / ".git").exists()
    assert not list(store.repository.glob("hooks/*"))


def test_prune_drops_snapshots_beyond_the_count_and_collects_their_objects(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    store = SnapshotStore(ws)
    trees = []
    for n in range(3):
        (ws / "f").write_text(f"version {n}")
        trees.append(store.snapshot().tree)
        store.keep(trees[-1], f"s/{n}")
    assert store.prune(max_age_days=365, max_count=1) == 2
    objects = subprocess.run(["git", "--git-dir", str(store.repository), "cat-file", "--batch-all-objects",
                              "--batch-check"], capture_output=True, text=True, check=True).stdout
    assert trees[2] in objects and trees[0] not in objects and trees[1] not in objects


def test_a_file_the_target_did_not_cover_is_not_removed(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "big.bin").write_bytes(b"b" * 2048)
    store = SnapshotStore(ws, max_file_bytes=1024)
    before = store.snapshot()
    (ws / "big.bin").write_bytes(b"small now")  # covered from here on
    (ws / "new.txt").write_text("n")
    now = store.snapshot()
    assert {c.path for c in store.restore(now, before)} == {"new.txt"}
    assert (ws / "big.bin").read_bytes() == b"small now"


def test_a_repository_cut_short_is_made_again_whole(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "crlf.txt").write_bytes(b"a\r\n")
    (ws / ".gitattributes").write_text("* text=auto eol=lf\n")
    store = SnapshotStore(ws)
    store.repository.mkdir(parents=True)
    (store.repository / "config").write_text("[core]\n")  # a disk filled up during an old init
    snap = store.snapshot()
    assert (store.repository / "info" / "attributes").is_file()
    (ws / "crlf.txt").write_bytes(b"b")
    store.restore(store.snapshot(), snap)
    assert (ws / "crlf.txt").read_bytes() == b"a\r\n"
