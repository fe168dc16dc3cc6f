"""The results file of ``codeloop batch`` (issue 39): one JSON line per finished task.

A line is appended with one ``write`` on an ``O_APPEND`` descriptor and ``fsync``-ed before
the task counts as finished, so a kill at any instant leaves at most one torn last line.
Reading ignores a line that does not parse (a torn one), and opening for append first cuts
such a torn tail, so the next line starts on a line of its own. Only the batch process
writes this file; workers hand their results back to it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def read_results(path: Path) -> dict[str, dict[str, Any]]:
    """The finished tasks of ``path`` by id (the first line of an id wins); torn or foreign
    lines are skipped. A missing file has none."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return {}
    found: dict[str, dict[str, Any]] = {}
    for line in data.split(b"\n"):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("id"), str):
            found.setdefault(record["id"], record)
    return found


def _cut_torn_tail(path: Path) -> None:
    """Cut what follows the last newline (a line a kill left half-written)."""
    try:
        with open(path, "rb+") as handle:
            end = handle.seek(0, os.SEEK_END)
            pos = end
            while pos > 0:  # back to the last newline, a chunk at a time (a line may be large)
                start = max(0, pos - (1 << 20))
                handle.seek(start)
                chunk = handle.read(pos - start)
                if pos == end and chunk.endswith(b"\n"):
                    return
                cut = chunk.rfind(b"\n")
                if cut >= 0:
                    pos = start + cut + 1
                    break
                pos = start
            handle.truncate(pos)
            handle.flush()
            os.fsync(handle.fileno())
    except FileNotFoundError:
        return


class ResultsWriter:
    """Appends finished tasks to the results file; :meth:`close` when done."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        _cut_torn_tail(path)
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)

    def append(self, record: dict[str, Any]) -> None:
        """Write ``record`` as one line, durably (returns after ``fsync``)."""
        line = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
        written = os.write(self._fd, line)
        if written != len(line):  # a full disk: cut the partial line so the next one starts clean
            os.close(self._fd)
            _cut_torn_tail(self.path)
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
            raise OSError(f"{self.path}: only {written} of {len(line)} bytes written (disk full?)")
        os.fsync(self._fd)

    def close(self) -> None:
        os.close(self._fd)
