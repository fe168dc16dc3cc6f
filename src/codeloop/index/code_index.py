"""``CodeIndex``: the one object faces use to build and query a repository's index.

Readers open the SQLite database read-only per call (WAL lets them run while a build
or ``index watch`` writes). Paths given to queries are repository-relative; files are
read from disk only through :func:`codeloop.environments.resolver.resolve_workspace_path`.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from codeloop.environments.resolver import resolve_workspace_path
from codeloop.environments.safe_open import read_bytes_beneath
from codeloop.index.ast_dump import syntax_tree
from codeloop.index.builder import MAX_FILE_BYTES, build_index
from codeloop.index.errors import IndexNotBuiltError, NotIndexedError
from codeloop.index.ignore import walk_repository
from codeloop.index.models import (
    BuildReport,
    ImpactReport,
    ImportEdge,
    ImportStatus,
    IndexStatus,
    SearchHit,
    Symbol,
)
from codeloop.index.schema import db_path_for, read_meta, stale_versions
from codeloop.index.search import SearchMode, escape_like, file_lines, search_chunks


def normalize_path(path: str) -> str:
    """A repository-relative path as stored in the index (``./a//b`` → ``a/b``)."""
    parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
    return "/".join(parts)


def file_tree(paths: list[str], max_depth: int = 3, notes: dict[str, str] | None = None) -> str:
    """An indented listing of sorted relative ``paths`` and their directories down to
    ``max_depth``; a directory cut by the depth shows how many files it holds, and a file's
    line ends with ``: note`` when ``notes`` has one (the repository map's symbols)."""
    entries: list[tuple[str, str]] = []  # (line, the directory's path or "" for a file)
    shown_dirs: set[str] = set()
    hidden: dict[str, int] = {}
    for full in paths:
        parts = full.split("/")
        for depth in range(len(parts)):
            key = "/".join(parts[:depth + 1])
            if depth >= max_depth:
                cut = "/".join(parts[:max_depth])
                hidden[cut] = hidden.get(cut, 0) + 1
                break
            if depth == len(parts) - 1:
                note = (notes or {}).get(full)
                entries.append(("  " * depth + parts[depth] + (f": {note}" if note else ""), ""))
            elif key not in shown_dirs:
                shown_dirs.add(key)
                entries.append(("  " * depth + parts[depth] + "/", key))
    return "\n".join(f"{line} ({hidden[key]} files)" if key in hidden else line for line, key in entries)


class CodeIndex:
    """The index of one repository (created lazily by :meth:`build`)."""

    def __init__(self, repo_root: str | Path, db_path: Path | None = None) -> None:
        self.repo_root = Path(repo_root).resolve()
        self.db_path = db_path or db_path_for(self.repo_root)

    # Writing --------------------------------------------------------------------------

    def build(self) -> BuildReport:
        """Create or incrementally refresh the index (see :mod:`codeloop.index.builder`)."""
        return build_index(self.repo_root, self.db_path)

    # Reading --------------------------------------------------------------------------

    @contextmanager
    def _open(self) -> Iterator[tuple[sqlite3.Connection, dict[str, str]]]:
        """A read-only connection and the ``meta`` table (empty when unreadable)."""
        conn = sqlite3.connect(f"file:{self.db_path}?mode=ro", uri=True, timeout=30)
        try:
            try:
                meta = read_meta(conn)
            except sqlite3.DatabaseError:
                meta = {}
            yield conn, meta
        finally:
            conn.close()

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        if not self.db_path.exists():
            raise IndexNotBuiltError(
                f"no index for {self.repo_root}; build it with: codeloop index build --repo {self.repo_root}")
        with self._open() as (conn, meta):
            if not meta:
                raise IndexNotBuiltError(f"the index of {self.repo_root} is empty or unreadable; rebuild it with: "
                                         f"codeloop index build --repo {self.repo_root}")
            yield conn

    def search(self, query: str, limit: int = 10, mode: SearchMode = "auto", path_prefix: str = "") -> list[SearchHit]:
        """Hits for ``query``, best first (see :mod:`codeloop.index.search`)."""
        with self._read() as conn:
            return search_chunks(conn, query, limit, mode, normalize_path(path_prefix))

    def lines(self, path: str) -> list[str]:
        """The indexed text of ``path`` as lines; raises ``NotIndexedError``."""
        with self._read() as conn:
            lines = file_lines(conn, normalize_path(path))
        if lines is None:
            raise NotIndexedError(f"{path} is not in the index (missing, ignored, binary or over "
                                  f"{MAX_FILE_BYTES} bytes); check the path or rebuild the index")
        return lines

    def snippet(self, doc_id: str, window: int = 15) -> tuple[str, int, int, str]:
        """Lines around a search hit's ``doc_id`` (``path#L<line>``; a bare path means line 1).

        Returns ``(path, first_line, last_line, text)``; raises ``NotIndexedError``.
        """
        path, _, line_text = doc_id.partition("#L")
        try:
            anchor = int(line_text) if line_text else 1
        except ValueError:
            raise NotIndexedError(f"bad doc_id {doc_id!r}: expected path#L<line> as returned by search") from None
        lines = self.lines(path)
        window = max(0, window)
        first = max(1, anchor - window)
        last = min(len(lines), anchor + window)
        return normalize_path(path), first, last, "\n".join(lines[first - 1:last])

    def symbols(self, path: str | None = None, name: str | None = None, kind: str | None = None,
                limit: int = 500) -> list[Symbol]:
        """Definitions, filtered by file, by name (exact name, qualified name or its last
        parts, case-insensitive) and by kind; in file order."""
        clauses, params = [], []
        if path:
            clauses.append("path = ?")
            params.append(normalize_path(path))
        if name:
            clauses.append("(name = ? COLLATE NOCASE OR qualified_name = ? COLLATE NOCASE "
                           "OR qualified_name LIKE ? ESCAPE '\\')")
            params += [name, name, "%." + escape_like(name)]
        if kind:
            clauses.append("kind = ?")
            params.append(kind)
        where = ("WHERE " + " AND ".join(clauses)) if clauses else ""
        with self._read() as conn:
            rows = conn.execute(
                "SELECT id, path, language, kind, name, qualified_name, start_line, start_column, end_line, "
                f"end_column FROM symbols {where} ORDER BY path, start_line, start_column LIMIT ?",
                (*params, limit)).fetchall()
            if path and not rows and conn.execute(
                    "SELECT 1 FROM files WHERE path = ?", (normalize_path(path),)).fetchone() is None:
                raise NotIndexedError(f"{path} is not in the index; check the path or rebuild the index")
        return [Symbol(*row) for row in rows]

    def impact(self, path: str) -> ImpactReport:
        """Files importing ``path`` and files it imports, plus its import diagnostics."""
        rel = normalize_path(path)
        with self._read() as conn:
            if conn.execute("SELECT 1 FROM files WHERE path = ?", (rel,)).fetchone() is None:
                raise NotIndexedError(f"{path} is not in the index; check the path or rebuild the index")
            inbound = [r[0] for r in conn.execute(
                "SELECT DISTINCT source FROM import_targets WHERE target = ? ORDER BY source", (rel,))]
            outbound = [r[0] for r in conn.execute(
                "SELECT DISTINCT target FROM import_targets WHERE source = ? ORDER BY target", (rel,))]
        return ImpactReport(rel, tuple(inbound), tuple(outbound),
                            tuple(self.diagnostics(rel, statuses=("unresolved", "dynamic", "external"))))

    def diagnostics(self, path: str | None = None, limit: int = 200,
                    statuses: tuple[ImportStatus, ...] = ("unresolved", "dynamic")) -> list[ImportEdge]:
        """Imports that did not resolve to repository files, for one file or all."""
        marks = ",".join("?" * len(statuses))
        params: list[Any] = list(statuses)
        where = f"i.status IN ({marks})"
        if path:
            where += " AND f.path = ?"
            params.append(normalize_path(path))
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT f.path, i.line, i.specifier, i.status FROM imports i JOIN files f ON f.id = i.file_id "
                f"WHERE {where} ORDER BY f.path, i.line LIMIT ?", (*params, limit)).fetchall()
        return [ImportEdge(source=r[0], line=r[1], specifier=r[2], status=r[3]) for r in rows]

    def imports(self, path: str) -> list[ImportEdge]:
        """Every import of ``path`` with its status and target files."""
        rel = normalize_path(path)
        with self._read() as conn:
            rows = conn.execute(
                "SELECT i.id, i.line, i.specifier, i.status FROM imports i JOIN files f ON f.id = i.file_id "
                "WHERE f.path = ? ORDER BY i.line", (rel,)).fetchall()
            targets: dict[int, list[str]] = {}
            for import_id, target in conn.execute(
                    "SELECT import_id, target FROM import_targets WHERE source = ?", (rel,)):
                targets.setdefault(import_id, []).append(target)
        return [ImportEdge(rel, line, spec, status, tuple(sorted(targets.get(i, []))))
                for i, line, spec, status in rows]

    def files(self) -> list[str]:
        """Indexed text files, sorted (binary files are recorded but not listed)."""
        with self._read() as conn:
            return [r[0] for r in conn.execute("SELECT path FROM files WHERE kind != 'binary' ORDER BY path")]

    def tree(self, max_depth: int = 3, path_prefix: str = "") -> str:
        """An indented listing of indexed files and directories down to ``max_depth``;
        a directory cut by the depth shows how many files it holds."""
        prefix = normalize_path(path_prefix)
        paths = [p for p in self.files() if not prefix or p == prefix or p.startswith(prefix + "/")]
        return file_tree([p[len(prefix) + 1:] if prefix else p for p in paths], max_depth)

    def ast(self, path: str, max_depth: int = 6, max_nodes: int = 2000) -> dict[str, Any]:
        """The syntax tree of ``path`` read from disk through the workspace resolver."""
        resolved = resolve_workspace_path(self.repo_root, path, must_exist=True)
        data = read_bytes_beneath(self.repo_root, resolved, path)
        return syntax_tree(normalize_path(path), data, max_depth, max_nodes)

    def status(self) -> IndexStatus:
        """Whether the index exists and is current (compares mtime and size, no hashing)."""
        exists = self.db_path.exists()
        if not exists:
            return IndexStatus(str(self.repo_root), str(self.db_path), False, True, ("not_built",), 0, 0, 0, None)
        with self._open() as (conn, meta):
            reasons = stale_versions(meta) if meta else ["not_built"]
            files = symbols = 0
            if meta and not reasons:
                stored = {r[0]: (r[1], r[2]) for r in conn.execute("SELECT path, mtime_ns, size FROM files")}
                files = conn.execute("SELECT count(*) FROM files WHERE kind != 'binary'").fetchone()[0]
                symbols = conn.execute("SELECT count(*) FROM symbols").fetchone()[0]
                walked = walk_repository(str(self.repo_root))
                current = {rel: (st.st_mtime_ns, st.st_size) for rel, st in walked
                           if st.st_size <= MAX_FILE_BYTES}
                changed = sum(stored.get(rel) != now for rel, now in current.items())
                changed += len(stored.keys() - current)  # files gone since the build
                if changed:
                    reasons.append(f"files_changed: {changed}")
        size = sum(os.path.getsize(p) for p in (str(self.db_path), f"{self.db_path}-wal")
                   if os.path.exists(p))
        built = meta.get("built_at")
        return IndexStatus(str(self.repo_root), str(self.db_path), True, bool(reasons), tuple(reasons), files,
                           symbols, size, float(built) if built else None)

    def ensure_fresh(self) -> tuple[BuildReport | None, bool]:
        """Build when missing or stale; returns the report (``None`` if nothing was done)
        and whether the index was stale before."""
        return (self.build(), True) if self.status().stale else (None, False)

