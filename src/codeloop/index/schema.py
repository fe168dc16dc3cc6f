"""The index's SQLite schema, where the database lives, and when it is stale.

One database per repository, in the user's cache directory
(``platformdirs.user_cache_dir("codeloop")/index``, or ``$CODELOOP_INDEX_DIR``), named
after the repository's directory and a hash of its absolute path. Text is stored once
in ``chunks``; two FTS5 tables index it as external content: ``chunks_fts`` (words,
BM25) and ``chunks_tri`` (trigrams, for substring search).

A change of :data:`SCHEMA_VERSION` or of :func:`parser_version` (our extraction rules,
tree-sitter or a grammar wheel) makes the index stale; the next build drops and
rebuilds it.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from functools import cache
from importlib import metadata
from pathlib import Path

import platformdirs

from codeloop.index.languages import GRAMMARS

SCHEMA_VERSION = "3"
EXTRACTION_VERSION = "4"
"""Bump when symbol/import/chunk extraction changes so existing indexes are rebuilt."""

_DDL = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files(
    id INTEGER PRIMARY KEY, path TEXT UNIQUE NOT NULL, language TEXT, kind TEXT NOT NULL,
    mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL, hash TEXT NOT NULL, lines INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS chunks(
    id INTEGER PRIMARY KEY, file_id INTEGER NOT NULL, path TEXT NOT NULL, heading TEXT NOT NULL,
    body TEXT NOT NULL, start_line INTEGER NOT NULL, end_line INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS chunks_file ON chunks(file_id);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    path, heading, body, content='chunks', content_rowid='id', tokenize='unicode61 remove_diacritics 2');
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_tri USING fts5(
    body, content='chunks', content_rowid='id', tokenize='trigram');
CREATE TABLE IF NOT EXISTS symbols(
    id TEXT PRIMARY KEY, file_id INTEGER NOT NULL, path TEXT NOT NULL, language TEXT NOT NULL,
    kind TEXT NOT NULL, name TEXT NOT NULL, qualified_name TEXT NOT NULL,
    start_line INTEGER NOT NULL, start_column INTEGER NOT NULL, end_line INTEGER NOT NULL,
    end_column INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS symbols_file ON symbols(file_id);
CREATE INDEX IF NOT EXISTS symbols_name ON symbols(name COLLATE NOCASE);
CREATE TABLE IF NOT EXISTS imports(
    id INTEGER PRIMARY KEY, file_id INTEGER NOT NULL, line INTEGER NOT NULL, specifier TEXT NOT NULL,
    dynamic INTEGER NOT NULL, names TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'unresolved');
CREATE INDEX IF NOT EXISTS imports_file ON imports(file_id);
CREATE TABLE IF NOT EXISTS import_targets(import_id INTEGER NOT NULL, source TEXT NOT NULL, target TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS import_targets_source ON import_targets(source);
CREATE INDEX IF NOT EXISTS import_targets_target ON import_targets(target);
"""

_TABLES = ("meta", "files", "chunks", "chunks_fts", "chunks_tri", "symbols", "imports", "import_targets")


@cache
def parser_version() -> str:
    """Our extraction version plus the versions of tree-sitter and every grammar wheel."""
    parts = [f"extract={EXTRACTION_VERSION}"]
    wheels = dict.fromkeys(module.replace("_", "-") for module, _ in GRAMMARS.values())
    for dist in ("tree-sitter", *wheels):
        try:
            parts.append(f"{dist}={metadata.version(dist)}")
        except metadata.PackageNotFoundError:
            parts.append(f"{dist}=absent")
    return ";".join(parts)


def index_dir() -> Path:
    """Directory holding the databases: ``$CODELOOP_INDEX_DIR`` or the user cache dir."""
    override = os.environ.get("CODELOOP_INDEX_DIR")
    if override:
        return Path(override).expanduser()
    return Path(platformdirs.user_cache_dir("codeloop")) / "index"


def db_path_for(repo_root: str | Path) -> Path:
    """The database file of the repository at ``repo_root``."""
    root = Path(repo_root).resolve()
    digest = hashlib.sha256(str(root).encode()).hexdigest()[:16]
    name = "".join(c if c.isalnum() or c in "-_" else "_" for c in root.name) or "root"
    return index_dir() / f"{name}-{digest}.sqlite"


def connect(db_path: Path) -> sqlite3.Connection:
    """Open (creating if needed) a database with the pragmas the index relies on."""
    db_path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(db_path, timeout=30, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA temp_store=MEMORY")
    return conn


def read_meta(conn: sqlite3.Connection) -> dict[str, str]:
    """The ``meta`` table as a dict (empty when the schema does not exist yet)."""
    try:
        return dict(conn.execute("SELECT key, value FROM meta").fetchall())
    except sqlite3.OperationalError:
        return {}


def stale_versions(meta: dict[str, str]) -> list[str]:
    """Reasons the stored versions differ from this code's (empty when current)."""
    reasons = []
    if meta.get("schema_version") != SCHEMA_VERSION:
        reasons.append("schema_changed")
    if meta.get("parser_version") != parser_version():
        reasons.append("parser_changed")
    return reasons


def ensure_schema(conn: sqlite3.Connection, repo_root: str) -> bool:
    """Create the schema, dropping an outdated one first; True when the index was (re)created.

    Must be called inside a write transaction.
    """
    meta = read_meta(conn)
    if meta and not stale_versions(meta):
        return False
    for table in _TABLES:
        conn.execute(f"DROP TABLE IF EXISTS {table}")
    # executescript() would commit; statements one by one stay inside the caller's transaction.
    for statement in _DDL.split(";"):
        if statement.strip():
            conn.execute(statement)
    conn.executemany("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", [
        ("schema_version", SCHEMA_VERSION), ("parser_version", parser_version()), ("repo_root", repo_root)])
    return True
