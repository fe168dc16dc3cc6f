"""Building and incrementally refreshing a repository's index.

A build walks the repository (``.gitignore`` respected), compares each file's mtime
and size with the index, hashes only the files that differ, and re-parses only those
whose hash changed; files that disappeared (or became ignored) are removed. Everything
happens in one write transaction with batched inserts, so a reader never sees half a
build and a crash leaves the previous index intact. Import edges are re-resolved for
the whole repository after any change, since a new file can resolve someone else's
import.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from codeloop.environments.errors import WorkspaceError
from codeloop.environments.safe_open import read_bytes_beneath
from codeloop.index.chunks import Chunk, code_chunks, document_chunks
from codeloop.index.ignore import walk_repository
from codeloop.index.import_resolution import ImportResolver
from codeloop.index.imports import RawImport, extract_imports
from codeloop.index.languages import is_document, language_for, parse, parser
from codeloop.index.models import BuildReport, Symbol
from codeloop.index.schema import connect, ensure_schema
from codeloop.index.symbols import extract_symbols

_MANIFESTS = ("go.mod", "Cargo.toml")

MAX_FILE_BYTES = 2_000_000
"""Larger files (generated code, data dumps) are not indexed."""


@dataclass(frozen=True)
class _Parsed:
    language: str | None
    kind: str
    text: str
    chunks: list[Chunk]
    symbols: list[Symbol]
    imports: list[RawImport]


def parse_file(path: str, data: bytes) -> _Parsed:
    """Chunks, definitions and imports of one file's bytes (binary files: a bare record,
    kept so a rebuild or status check does not look at them again)."""
    if b"\0" in data[:8192]:
        return _Parsed(None, "binary", "", [], [], [])
    text = data.decode("utf-8", "replace")
    language = language_for(path)
    ts_parser = parser(language) if language else None
    if language and ts_parser is not None:
        tree = parse(ts_parser, language, data)
        symbols = extract_symbols(path, language, tree)
        imports = extract_imports(language, tree)
        chunks = code_chunks(text, [(s.start_line, s.qualified_name) for s in symbols])
        return _Parsed(language, "code", text, chunks, symbols, imports)
    if is_document(path):
        return _Parsed(None, "doc", text, document_chunks(text), [], [])
    return _Parsed(language, "text", text, code_chunks(text, []), [], [])


def _delete_files(conn: sqlite3.Connection, file_ids: list[int]) -> None:
    for start in range(0, len(file_ids), 500):
        batch = file_ids[start:start + 500]
        marks = ",".join("?" * len(batch))
        for table in ("chunks_fts", "chunks_tri"):
            columns = "path, heading, body" if table == "chunks_fts" else "body"
            conn.execute(f"INSERT INTO {table}({table}, rowid, {columns}) "
                         f"SELECT 'delete', id, {columns} FROM chunks WHERE file_id IN ({marks})", batch)
        conn.execute(f"DELETE FROM chunks WHERE file_id IN ({marks})", batch)
        conn.execute(f"DELETE FROM symbols WHERE file_id IN ({marks})", batch)
        conn.execute(f"DELETE FROM imports WHERE file_id IN ({marks})", batch)
        conn.execute(f"DELETE FROM files WHERE id IN ({marks})", batch)


def _insert_file(conn: sqlite3.Connection, path: str, st: os.stat_result, digest: str, parsed: _Parsed) -> None:
    cur = conn.execute(
        "INSERT INTO files(path, language, kind, mtime_ns, size, hash, lines) VALUES (?,?,?,?,?,?,?)",
        (path, parsed.language, parsed.kind, st.st_mtime_ns, st.st_size, digest,
         parsed.text.count("\n") + 1 if parsed.kind != "binary" else 0))
    file_id = cur.lastrowid
    assert file_id is not None
    conn.executemany(
        "INSERT INTO chunks(file_id, path, heading, body, start_line, end_line) VALUES (?,?,?,?,?,?)",
        [(file_id, path, c.heading, c.body, c.start_line, c.end_line) for c in parsed.chunks])
    conn.executemany("INSERT INTO symbols VALUES (?,?,?,?,?,?,?,?,?,?,?)", [
        (s.id, file_id, s.path, s.language, s.kind, s.name, s.qualified_name, s.start_line, s.start_column,
         s.end_line, s.end_column) for s in parsed.symbols])
    if parsed.imports:
        conn.executemany("INSERT INTO imports(file_id, line, specifier, dynamic, names) VALUES (?,?,?,?,?)",
                         [(file_id, i.line, i.specifier, int(i.dynamic), "\n".join(i.names))
                          for i in parsed.imports])


def _resolve_imports(conn: sqlite3.Connection, root: Path, sources: list[str] | None = None) -> None:
    """Resolve the imports of ``sources`` (all files when ``None``) and rewrite their edges."""
    files = {row[0] for row in conn.execute("SELECT path FROM files WHERE kind != 'binary'")}
    go_mods: dict[str, str] = {}
    for path in files:
        if path == "go.mod" or path.endswith("/go.mod"):
            try:
                go_mods[path] = read_bytes_beneath(root, root / path, path).decode("utf-8", "replace")
            except (OSError, WorkspaceError):
                continue
    resolver = ImportResolver(files, go_mods)
    query = ("SELECT imports.id, files.path, files.language, imports.line, imports.specifier, "
             "imports.dynamic, imports.names FROM imports JOIN files ON files.id = imports.file_id")
    if sources is None:
        conn.execute("DELETE FROM import_targets")
        rows = conn.execute(query)
    else:
        conn.execute("CREATE TEMP TABLE IF NOT EXISTS resolve_sources(path TEXT PRIMARY KEY)")
        conn.execute("DELETE FROM resolve_sources")
        conn.executemany("INSERT OR IGNORE INTO resolve_sources VALUES (?)", [(p,) for p in sources])
        conn.execute("DELETE FROM import_targets WHERE source IN (SELECT path FROM resolve_sources)")
        rows = conn.execute(query + " WHERE files.path IN (SELECT path FROM resolve_sources)")
    statuses: list[tuple[str, int]] = []
    targets: list[tuple[int, str, str]] = []
    for import_id, source, language, line, spec, dynamic, names in rows.fetchall():
        raw = RawImport(line, spec, bool(dynamic), tuple(n for n in names.split("\n") if n))
        status, found = resolver.resolve(source, language or "", raw)
        statuses.append((status, import_id))
        targets.extend((import_id, source, t) for t in found if t != source)
    conn.executemany("UPDATE imports SET status = ? WHERE id = ?", statuses)
    conn.executemany("INSERT INTO import_targets(import_id, source, target) VALUES (?,?,?)", targets)


def _discard(db_path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db_path}{suffix}").unlink(missing_ok=True)


def build_index(repo_root: str | Path, db_path: Path) -> BuildReport:
    """Create or incrementally refresh the index of ``repo_root`` in ``db_path``.

    The database is a cache: one that SQLite cannot read (corrupt, not a database) is
    deleted and rebuilt. Raises ``FileNotFoundError`` when ``repo_root`` is not a directory.
    """
    try:
        return _build(repo_root, db_path)
    except sqlite3.DatabaseError as exc:
        if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
            raise
        _discard(db_path)
        return _build(repo_root, db_path)


def _build(repo_root: str | Path, db_path: Path) -> BuildReport:
    started = time.monotonic()
    root = Path(repo_root).resolve()
    if not root.is_dir():
        raise FileNotFoundError(f"repository root {root} is not a directory")
    conn = connect(db_path)
    try:
        conn.execute("BEGIN IMMEDIATE")
        full = ensure_schema(conn, str(root))
        existing = {row[0]: row[1:] for row in conn.execute("SELECT path, id, mtime_ns, size, hash FROM files")}
        seen: set[str] = set()
        stale_ids: list[int] = []
        pending: list[tuple[str, os.stat_result, str, _Parsed]] = []
        touched: list[tuple[int, int, int]] = []
        for rel, st in walk_repository(str(root)):
            if st.st_size > MAX_FILE_BYTES:
                continue
            old = existing.get(rel)
            if old is None or old[1:3] != (st.st_mtime_ns, st.st_size):
                try:
                    data = read_bytes_beneath(root, root / rel, rel)
                except (OSError, WorkspaceError):  # not a plain file now (FIFO, hard link, link swapped in)
                    continue
                digest = hashlib.blake2b(data, digest_size=16).hexdigest()
                if old is not None and old[3] == digest:
                    touched.append((st.st_mtime_ns, st.st_size, old[0]))
                else:
                    if old is not None:  # changed: its rows are replaced
                        stale_ids.append(old[0])
                    pending.append((rel, st, digest, parse_file(rel, data)))
            seen.add(rel)
        added, updated, unchanged = len(pending) - len(stale_ids), len(stale_ids), len(seen) - len(pending)
        removed_ids = [row[0] for path, row in existing.items() if path not in seen]
        _delete_files(conn, stale_ids + removed_ids)
        conn.executemany("UPDATE files SET mtime_ns = ?, size = ? WHERE id = ?", touched)
        max_chunk = conn.execute("SELECT coalesce(max(id), 0) FROM chunks").fetchone()[0]
        for rel, st, digest, parsed in pending:
            _insert_file(conn, rel, st, digest, parsed)
        conn.execute("INSERT INTO chunks_fts(rowid, path, heading, body) "
                     "SELECT id, path, heading, body FROM chunks WHERE id > ?", (max_chunk,))
        conn.execute("INSERT INTO chunks_tri(rowid, body) SELECT id, body FROM chunks WHERE id > ?", (max_chunk,))
        # A new or removed file (or a changed go.mod/Cargo.toml) can change how anyone's
        # imports resolve; a changed file alone only changes its own imports.
        if full or added or removed_ids or any(p[0].endswith(_MANIFESTS) for p in pending):
            _resolve_imports(conn, root)
        elif pending:
            _resolve_imports(conn, root, [p[0] for p in pending])
        conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('built_at', ?)", (str(time.time()),))
        total = conn.execute("SELECT count(*) FROM files").fetchone()[0]
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    finally:
        conn.close()
    return BuildReport(files_total=total, added=added, updated=updated, removed=len(removed_ids),
                       unchanged=unchanged, full_rebuild=full, elapsed_ms=int((time.monotonic() - started) * 1000))
