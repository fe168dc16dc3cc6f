"""Snapshots that cost in proportion to what changed (issue 35): a real inotify watcher tells the
store which paths changed; the result must always equal a full scan's, and whenever events may
have been lost the store scans everything."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from codeloop.sessions.snapshots import SnapshotError, SnapshotStore
from codeloop.sessions.watch import ChangeWatcher

ROUNDS = [
    "sed -i 's/a/b/' src/one.py && rm .env",
    "mkdir -p build/deep/er && printf x > build/deep/er/o.o && printf y > build/top.o",
    "mv build out && chmod 700 run.sh && ln -s out/top.o link",
    "touch tmp.txt && rm tmp.txt && mkdir -p node_modules/p && echo z > node_modules/p/i.js",
    "rm -r out && printf big > big.bin && chmod 640 src/one.py && rm link && mkdir link",
    "git init -q nested && echo n > nested/n.txt",
    "echo m > nested/n.txt && echo q > node_modules/p/j.js && printf 'bigger' > big.bin",
    "rm -rf node_modules nested big.bin && mkdir target && echo t > target/t",
    # A tree moved in is one event: what it holds (a large file, odd modes, a heavy directory)
    # is found by scanning it.
    "mkdir -p ../outside/sub/.venv && printf large > ../outside/sub/big && printf f > ../outside/sub/f "
    "&& chmod 600 ../outside/sub/f && echo v > ../outside/sub/.venv/v && mv ../outside moved",
]


def full(ws: Path, tmp: Path, n: int) -> tuple[str, object, dict[str, int]]:
    fresh = SnapshotStore(ws, index=f"index-full-{n}", git_dir=tmp / f"full{n}.git", max_file_bytes=2)
    snap = fresh.snapshot()
    return snap.tree, snap.skipped, snap.modes


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "one.py").write_text("a = 1\n")
    (ws / ".env").write_text("K=v\n")
    (ws / "run.sh").write_text("#!/bin/sh\n")
    return ws


def test_snapshots_from_watched_changes_equal_full_scans(ws: Path, tmp_path: Path) -> None:
    store = SnapshotStore(ws, max_file_bytes=2)
    watcher = ChangeWatcher(ws, tmp_path / "watch")
    try:
        watcher.take()
        store.snapshot()
        for n, line in enumerate(ROUNDS):
            subprocess.run(["bash", "-ec", line], cwd=ws, check=True, capture_output=True)
            changed = watcher.take()
            assert changed is not None  # a few events: no full scan needed
            snap = store.snapshot(changed)
            assert (snap.tree, snap.skipped, snap.modes) == full(ws, tmp_path, n), line
    finally:
        watcher.close()


def test_nothing_changed_runs_no_git(ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = SnapshotStore(ws)
    watcher = ChangeWatcher(ws, tmp_path / "watch")
    try:
        watcher.take()
        first = store.snapshot()
        monkeypatch.setenv("PATH", str(tmp_path / "no-git-here"))
        assert store.snapshot(watcher.take()) == first
        (ws / "new.txt").write_text("x")
        with pytest.raises(SnapshotError, match="cannot run git"):
            store.snapshot(watcher.take())
    finally:
        watcher.close()


def test_possibly_lost_events_force_a_full_scan(ws: Path, tmp_path: Path) -> None:
    store = SnapshotStore(ws)
    watcher = ChangeWatcher(ws, tmp_path / "watch", limit=3)
    try:
        watcher.take()
        store.snapshot()
        for i in range(10):  # more distinct changes than the limit: the queue may have overflowed
            (ws / f"f{i}.txt").write_text(str(i))
        assert watcher.take() is None
        (ws / "g.txt").write_text("g")
        watcher.lose()
        assert watcher.take() is None
        (ws / "h.txt").write_text("h")
        assert watcher.take() == {str((ws / "h.txt").resolve())}
    finally:
        watcher.close()
    # A watcher that stopped never answers "nothing changed": its sentinel does not arrive.
    (ws / "late.txt").write_text("late")
    assert watcher.take(wait=0.5) is None
    snap = store.snapshot(None)
    assert {"late.txt", "g.txt", "f9.txt"} <= store.tree_paths(snap.tree)
