"""Keeping an index fresh while files change (``codeloop index watch``)."""

from __future__ import annotations

from collections.abc import Callable

from watchfiles import watch

from codeloop.index.code_index import CodeIndex
from codeloop.index.models import BuildReport


def watch_index(index: CodeIndex, on_build: Callable[[BuildReport], None],
                stop: Callable[[], bool] | None = None, debounce_ms: int = 300) -> None:
    """Build once, then rebuild incrementally after every batch of file changes.

    Returns when ``stop()`` becomes true (checked after each batch and every second) or
    on ``KeyboardInterrupt``. Changes inside the index directory itself are ignored, so
    an index kept inside the repository does not trigger itself.
    """
    on_build(index.build())
    db_dir = str(index.db_path.parent)

    def relevant(_change: object, path: str) -> bool:
        return not path.startswith(db_dir) and "/.git/" not in path

    try:
        for _changes in watch(index.repo_root, watch_filter=relevant, debounce=debounce_ms, rust_timeout=1000,
                              yield_on_timeout=True, stop_event=None):
            if stop is not None and stop():
                return
            if _changes:
                on_build(index.build())
    except KeyboardInterrupt:
        return
