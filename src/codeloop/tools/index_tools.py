"""The index as agent tools: ``search_code``, ``find_symbol``, ``impact``.

``index_tools(repo_root)`` returns :class:`~codeloop.tools.registry.RegisteredTool` values
for any ``ToolRegistry``; calls go through ``execute_tool_call`` like every other tool
(validation, policy, truncation). The index is refreshed before the first call of a
session and whenever files changed since (an incremental build: only changed files are
re-parsed), in a worker thread so the event loop keeps running.

It lives in ``tools`` (not ``index``) because layers only import downward: the tools layer
uses the index, the index knows nothing of tools.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from codeloop.environments.base import ExecutionEnvironment
from codeloop.index.code_index import CodeIndex
from codeloop.index.errors import CodeIndexError
from codeloop.index.models import ImpactReport, SearchHit, Symbol
from codeloop.llm.types import ToolDefinition
from codeloop.tools.registry import RegisteredTool, ToolContext, ToolOutput, object_schema

SEARCH_CODE = ToolDefinition(
    name="search_code",
    description=(
        "Search the repository's code and documents through the code index. Words are ranked with BM25; "
        "a query with punctuation (e.g. 'foo.bar(') is matched as a case-insensitive substring. Returns "
        "path:line, the enclosing definition or document heading, and a few lines around each hit."),
    parameters=object_schema({
        "query": {"type": "string", "minLength": 1, "description": "Words or an exact substring."},
        "limit": {"type": "integer", "minimum": 1, "maximum": 100, "description": "Most hits (default 10)."},
        "path": {"type": "string", "description": "Only search under this directory (repository-relative)."},
        "mode": {"type": "string", "enum": ["auto", "words", "substring"]},
    }, ["query"]),
)

FIND_SYMBOL = ToolDefinition(
    name="find_symbol",
    description=(
        "Find definitions (classes, functions, methods, structs, interfaces, ...) by name or qualified name "
        "('Session.run'), case-insensitive, optionally in one file or of one kind. Returns path:line:column, "
        "kind, qualified name and the line range."),
    parameters=object_schema({
        "name": {"type": "string", "minLength": 1, "description": "Name or qualified name."},
        "kind": {"type": "string", "description": "class, function, method, struct, interface, enum, ..."},
        "path": {"type": "string", "description": "Only this file."},
        "limit": {"type": "integer", "minimum": 1, "maximum": 500},
    }, ["name"]),
)

IMPACT = ToolDefinition(
    name="impact",
    description=(
        "Show which repository files import the given file (inbound: what a change may break) and which "
        "files it imports (outbound), plus its imports that did not resolve (external, unresolved, dynamic). "
        "Python, JavaScript/TypeScript, Go and Rust."),
    parameters=object_schema({
        "path": {"type": "string", "minLength": 1, "description": "Repository-relative file path."},
    }, ["path"]),
)


def format_hits(query: str, hits: list[SearchHit]) -> str:
    """Search hits as the model reads them."""
    if not hits:
        return f"No matches for {query!r}."
    blocks = []
    for hit in hits:
        anchor = f"  [{hit.heading}]" if hit.heading else ""
        snippet = "\n".join(f"    {line}" for line in hit.snippet.split("\n"))
        blocks.append(f"{hit.path}:{hit.line}{anchor}\n{snippet}")
    return "\n".join(blocks)


def format_symbols(name: str, symbols: list[Symbol]) -> str:
    """Definitions as the model reads them."""
    if not symbols:
        return f"No definition named {name!r}. Try search_code to find where it is mentioned."
    return "\n".join(f"{s.path}:{s.start_line}:{s.start_column + 1} {s.kind} {s.qualified_name} "
                     f"(lines {s.start_line}-{s.end_line})" for s in symbols)


def format_impact(report: ImpactReport) -> str:
    """An impact report as the model reads it."""
    lines = [f"Imported by ({len(report.inbound)}):", *[f"  {p}" for p in report.inbound]]
    lines += [f"Imports ({len(report.outbound)}):", *[f"  {p}" for p in report.outbound]]
    if report.diagnostics:
        lines.append("Not resolved to repository files:")
        lines += [f"  line {d.line}: {d.specifier or '<computed at run time>'} ({d.status})"
                  for d in report.diagnostics]
    return "\n".join(lines)


class _IndexedRepository:
    """One index shared by the three tools; refreshed at most once per batch of changes."""

    def __init__(self, repo_root: str | Path) -> None:
        self.index = CodeIndex(repo_root)
        self._lock = asyncio.Lock()

    async def fresh(self) -> CodeIndex:
        async with self._lock:
            await asyncio.to_thread(self.index.ensure_fresh)
        return self.index


def index_tools(repo_root: str | Path) -> list[RegisteredTool]:
    """``search_code``, ``find_symbol`` and ``impact`` over the index of ``repo_root``.

    Errors the model can act on (unknown file, empty index) come back as error results
    with a message; nothing here raises into the loop.
    """
    repo = _IndexedRepository(repo_root)

    async def search_code(args: dict[str, Any], env: ExecutionEnvironment, ctx: ToolContext) -> str | ToolOutput:
        index = await repo.fresh()
        hits = await asyncio.to_thread(index.search, args["query"], args.get("limit", 10),
                                       args.get("mode", "auto"), args.get("path", ""))
        return format_hits(args["query"], hits)

    async def find_symbol(args: dict[str, Any], env: ExecutionEnvironment, ctx: ToolContext) -> str | ToolOutput:
        index = await repo.fresh()
        try:
            found = await asyncio.to_thread(index.symbols, args.get("path"), args["name"], args.get("kind"),
                                            args.get("limit", 50))
        except CodeIndexError as exc:
            return ToolOutput(str(exc), is_error=True)
        return format_symbols(args["name"], found)

    async def impact(args: dict[str, Any], env: ExecutionEnvironment, ctx: ToolContext) -> str | ToolOutput:
        index = await repo.fresh()
        try:
            report = await asyncio.to_thread(index.impact, args["path"])
        except CodeIndexError as exc:
            return ToolOutput(str(exc), is_error=True)
        return format_impact(report)

    return [RegisteredTool(SEARCH_CODE, search_code), RegisteredTool(FIND_SYMBOL, find_symbol),
            RegisteredTool(IMPACT, impact)]
