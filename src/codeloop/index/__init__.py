"""Local code index: full-text search (SQLite FTS5), symbols (tree-sitter), import graph.

Usage::

    from codeloop.index import CodeIndex
    index = CodeIndex("/path/to/repo")
    index.build()                      # incremental after the first time
    index.search("parse request")      # BM25 hits with line snippets
    index.symbols(name="Session")      # definitions
    index.impact("src/app/session.py") # inbound/outbound imports
"""

from codeloop.index.code_index import CodeIndex, normalize_path
from codeloop.index.errors import CodeIndexError, IndexNotBuiltError, NotIndexedError
from codeloop.index.models import (
    BuildReport,
    ImpactReport,
    ImportEdge,
    IndexStatus,
    SearchHit,
    Symbol,
    as_json,
)
from codeloop.index.schema import db_path_for, index_dir

__all__ = [
    "BuildReport",
    "CodeIndex",
    "CodeIndexError",
    "ImpactReport",
    "ImportEdge",
    "IndexNotBuiltError",
    "IndexStatus",
    "NotIndexedError",
    "SearchHit",
    "Symbol",
    "as_json",
    "db_path_for",
    "index_dir",
    "normalize_path",
]
