"""Values returned by the code index (frozen dataclasses; they cross into tools and codali)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

ImportStatus = Literal["resolved", "unresolved", "external", "dynamic"]
"""How an import was resolved: ``resolved`` to files of the repository, ``external``
(a package outside the repository: stdlib, third party), ``unresolved`` (it looks like
it should be in the repository but no file matches), ``dynamic`` (computed at run
time: ``importlib.import_module(name)``, ``require(x)``, ``import(x)``)."""


def as_json(value: Any) -> Any:
    """A JSON-ready form of an index value (dataclass, list of them, or plain data)."""
    if isinstance(value, list):
        return [as_json(v) for v in value]
    if hasattr(value, "__dataclass_fields__"):
        return asdict(value)
    return value


@dataclass(frozen=True)
class SearchHit:
    """One result of :meth:`CodeIndex.search`."""

    path: str
    """File path relative to the repository root, ``/``-separated."""
    doc_id: str
    """Stable id of the matching chunk, ``path#L<start>-<end>``; accepted by ``snippet``."""
    line: int
    """1-based line of the first match inside the chunk."""
    start_line: int
    """First line of the chunk."""
    end_line: int
    """Last line of the chunk."""
    heading: str
    """For documents, the heading of the section that matched (the snippet's anchor);
    for code, the first definition in the chunk; may be empty."""
    snippet: str
    """A few lines around ``line``, verbatim."""
    score: float
    """BM25 score (higher is better) or, for substring search, 0."""


@dataclass(frozen=True)
class Symbol:
    """A definition found by tree-sitter."""

    id: str
    """Stable id: ``path::qualified_name`` (plus ``#N`` for the N-th duplicate); unchanged
    when lines move, changed when the definition is renamed or moved to another file."""
    path: str
    """File path relative to the repository root."""
    language: str
    """Language name (``python``, ``typescript``, ``tsx``, ``go``, ...)."""
    kind: str
    """``class``, ``function``, ``method``, ``struct``, ``interface``, ``enum``, ``trait``,
    ``impl``, ``type``, ``module``, ``namespace``, ``constant``, ``variable``, ``field``, ``macro``."""
    name: str
    """The name as written."""
    qualified_name: str
    """Names of enclosing definitions and the name, joined with ``.``."""
    start_line: int
    """1-based first line of the definition."""
    start_column: int
    """0-based column where the definition starts."""
    end_line: int
    """1-based last line."""
    end_column: int
    """0-based column where the definition ends."""


@dataclass(frozen=True)
class ImportEdge:
    """One import statement of a file and what it resolved to."""

    source: str
    """The importing file."""
    line: int
    """1-based line of the import."""
    specifier: str
    """The module as written (``os.path``, ``./util``, ``example.com/m/pkg``, ``crate::a``);
    empty for a dynamic import whose argument is not a literal."""
    status: ImportStatus
    """See :data:`ImportStatus`."""
    targets: tuple[str, ...] = ()
    """Repository files the import resolved to (a Go package may be several files)."""


@dataclass(frozen=True)
class ImpactReport:
    """Inbound and outbound import edges of one file (``docdex.impact``)."""

    file: str
    """The file asked about."""
    inbound: tuple[str, ...]
    """Files that import ``file``, sorted."""
    outbound: tuple[str, ...]
    """Files ``file`` imports, sorted."""
    diagnostics: tuple[ImportEdge, ...] = field(default=())
    """Imports of ``file`` that did not resolve to repository files (unresolved, dynamic,
    external)."""


@dataclass(frozen=True)
class BuildReport:
    """What one (incremental) build did."""

    files_total: int
    """Files in the index after the build."""
    added: int
    """Files indexed for the first time."""
    updated: int
    """Files whose content changed and were re-parsed."""
    removed: int
    """Files deleted from the index because they disappeared or became ignored."""
    unchanged: int
    """Files left untouched (same mtime and size, or same hash)."""
    full_rebuild: bool
    """True when the index was created or rebuilt because of a schema/parser change."""
    elapsed_ms: int
    """Wall-clock time of the build."""


@dataclass(frozen=True)
class IndexStatus:
    """State of a repository's index."""

    repo_root: str
    """Absolute repository root."""
    db_path: str
    """The SQLite file."""
    exists: bool
    """False before the first build."""
    stale: bool
    """True when a build would change something (files changed, schema or parser changed)."""
    stale_reasons: tuple[str, ...]
    """Why it is stale (``schema_changed``, ``files_changed: N``, ``not_built``...)."""
    files: int
    """Indexed files."""
    symbols: int
    """Indexed definitions."""
    size_bytes: int
    """Size of the database on disk."""
    built_at: float | None
    """Epoch seconds of the last build."""
