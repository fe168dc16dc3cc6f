"""Full-text and substring search over the index's chunks.

``auto`` mode (the default) runs a BM25 word search (all words must match, then any
word); a query holding punctuation (``foo(bar``, ``a.b``, ``->``) or finding nothing by
words falls back to a case-insensitive substring search on the trigram table. Queries
are untrusted text: they are turned into quoted FTS5 terms, never passed as FTS syntax.
"""

from __future__ import annotations

import re
import sqlite3
from typing import Literal

from codeloop.index.models import SearchHit

SearchMode = Literal["auto", "words", "substring"]
_WORD = re.compile(r"\w+", re.UNICODE)
SNIPPET_CONTEXT = 2
"""Lines shown before and after the matching line in a hit's snippet."""


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def _match_line(body: str, needles: list[str]) -> int:
    """Offset of the line matching the most distinct needles (the first such line)."""
    best, best_count = 0, 0
    for offset, line in enumerate(body.lower().split("\n")):
        count = sum(1 for n in needles if n in line)
        if count > best_count:
            best, best_count = offset, count
            if count == len(needles):
                break
    return best


def _hit(row: tuple[object, ...], needles: list[str], score: float, offset: int | None = None) -> SearchHit:
    """The hit of a chunk row, at line ``offset`` of it (default: the line matching most ``needles``)."""
    path, heading, body, start, end = row
    assert isinstance(body, str) and isinstance(start, int) and isinstance(end, int)
    offset = _match_line(body, needles) if offset is None else offset
    lines = body.split("\n")
    first = max(0, offset - SNIPPET_CONTEXT)
    line = start + offset
    return SearchHit(path=str(path), doc_id=f"{path}#L{line}", line=line, start_line=start, end_line=end,
                     heading=str(heading), snippet="\n".join(lines[first:offset + SNIPPET_CONTEXT + 1]),
                     score=round(score, 4))


def _words(conn: sqlite3.Connection, terms: list[str], joiner: str, limit: int,
           path_prefix: str) -> list[SearchHit]:
    match = f" {joiner} ".join(_quote(t) for t in terms)
    rows = conn.execute(
        "SELECT c.path, c.heading, c.body, c.start_line, c.end_line, bm25(chunks_fts, 2.0, 3.0, 1.0) AS rank "
        "FROM chunks_fts JOIN chunks c ON c.id = chunks_fts.rowid "
        "WHERE chunks_fts MATCH ? AND c.path LIKE ? ESCAPE '\\' ORDER BY rank LIMIT ?",
        (match, _like_prefix(path_prefix), limit)).fetchall()
    needles = [t.lower() for t in terms]
    return [_hit(r[:5], needles, -float(r[5])) for r in rows]


def _definitions(conn: sqlite3.Connection, terms: list[str], limit: int, path_prefix: str) -> list[SearchHit]:
    """Chunks defining a symbol named by the query's words joined (``resolve workspace path``
    → ``resolve_workspace_path`` or ``ResolveWorkspacePath``): code search should find the
    definition first."""
    names = {"_".join(terms).lower(), "".join(terms).lower()}
    rows = conn.execute(
        "SELECT c.path, s.qualified_name, c.body, c.start_line, c.end_line, s.start_line FROM symbols s "
        "JOIN chunks c ON c.path = s.path AND s.start_line BETWEEN c.start_line AND c.end_line "
        f"WHERE lower(s.name) IN ({','.join('?' * len(names))}) AND s.path LIKE ? ESCAPE '\\' "
        "ORDER BY s.path, s.start_line LIMIT ?", (*names, _like_prefix(path_prefix), limit)).fetchall()
    return [_hit(row[:5], [], 0.0, row[5] - row[3]) for row in rows]


def escape_like(text: str) -> str:
    """``text`` as a literal inside a ``LIKE ... ESCAPE '\\'`` pattern."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _like_prefix(prefix: str) -> str:
    return escape_like(prefix) + "%"


def _substring(conn: sqlite3.Connection, text: str, limit: int, path_prefix: str) -> list[SearchHit]:
    like = "%" + escape_like(text) + "%"
    if len(text) >= 3:
        rows = conn.execute(
            "SELECT c.path, c.heading, c.body, c.start_line, c.end_line FROM chunks_tri "
            "JOIN chunks c ON c.id = chunks_tri.rowid WHERE chunks_tri MATCH ? AND c.path LIKE ? ESCAPE '\\' "
            "ORDER BY c.path, c.start_line LIMIT ?", (_quote(text), _like_prefix(path_prefix), limit)).fetchall()
    else:
        rows = conn.execute(
            "SELECT path, heading, body, start_line, end_line FROM chunks WHERE body LIKE ? ESCAPE '\\' "
            "AND path LIKE ? ESCAPE '\\' ORDER BY path, start_line LIMIT ?",
            (like, _like_prefix(path_prefix), limit)).fetchall()
    return [_hit(r, [text.lower()], 0.0) for r in rows]


def search_chunks(conn: sqlite3.Connection, query: str, limit: int = 10, mode: SearchMode = "auto",
                  path_prefix: str = "") -> list[SearchHit]:
    """Hits for ``query``, best first, at most ``limit``; ``path_prefix`` limits to a subtree."""
    query = query.replace("\x00", "").strip()  # FTS5 ends a string at NUL ("unterminated string")
    if not query or limit <= 0:
        return []
    terms = _WORD.findall(query)
    has_punctuation = bool(re.search(r"[^\w\s]", query))
    if mode == "substring" or not terms:
        return _substring(conn, query, limit, path_prefix)
    hits: list[SearchHit] = []
    if mode == "auto" and has_punctuation:
        hits = _substring(conn, query, limit, path_prefix)
    if not hits:
        hits = _words(conn, terms, "AND", limit, path_prefix)
        if mode == "auto":
            found = _definitions(conn, terms, limit, path_prefix)
            if found:
                spans = {(h.path, h.start_line) for h in found}
                hits = (found + [h for h in hits if (h.path, h.start_line) not in spans])[:limit]
    if not hits and len(terms) > 1:
        hits = _words(conn, terms, "OR", limit, path_prefix)
    if not hits and mode == "auto" and not has_punctuation:
        hits = _substring(conn, query, limit, path_prefix)
    return hits


def file_lines(conn: sqlite3.Connection, path: str) -> list[str] | None:
    """The indexed text of ``path`` as lines (rebuilt from its chunks), ``None`` if absent."""
    row = conn.execute("SELECT id, lines FROM files WHERE path = ?", (path,)).fetchone()
    if row is None:
        return None
    lines = [""] * int(row[1])
    for body, start in conn.execute("SELECT body, start_line FROM chunks WHERE file_id = ?", (row[0],)):
        for i, text in enumerate(body.split("\n")):
            if start - 1 + i < len(lines):
                lines[start - 1 + i] = text
    return lines
