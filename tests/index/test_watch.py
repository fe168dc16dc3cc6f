"""``index watch``: a change on disk reaches the index without a manual build."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from codeloop.index import BuildReport, CodeIndex
from codeloop.index.watch import watch_index


def test_watch_reindexes_a_changed_file(sample_repo: Path) -> None:
    index = CodeIndex(sample_repo)
    reports: list[BuildReport] = []
    done = threading.Event()
    thread = threading.Thread(target=watch_index, args=(index, reports.append, done.is_set, 50), daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not reports and time.monotonic() < deadline:
        time.sleep(0.05)
    (sample_repo / "pkg" / "models.py").write_text("class Watched:\n    pass\n")
    while time.monotonic() < deadline and not index.symbols(name="Watched"):
        time.sleep(0.1)
    done.set()
    thread.join(timeout=10)
    assert [s.path for s in index.symbols(name="Watched")] == ["pkg/models.py"]
    assert any(r.updated == 1 for r in reports[1:])
