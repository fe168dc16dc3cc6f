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
from collections.abc import Callable
from pathlib import Path
from typing import Any

from codeloop.environments.base import ExecutionEnvironment
from codeloop.index.code_index import CodeIndex
from codeloop.index.errors import CodeIndexError
from codeloop.index.models import ImpactReport, SearchHit, Symbol
from codeloop.llm.types import ToolDefinition
from codeloop.tools.effects import reads
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


def index_tools(repo_root: str | Path) -> list[RegisteredTool]:
    """``search_code``, ``find_symbol`` and ``impact`` over the index of ``repo_root``.

    Errors the model can act on (unknown file, empty index) come back as error results
    with a message; nothing here raises into the loop.
    """
    index = CodeIndex(repo_root)
    lock = asyncio.Lock()  # one refresh at a time: a batch of changes is built once

    def tool(definition: ToolDefinition, answer: Callable[[dict[str, Any]], str]) -> RegisteredTool:
        # The index is the tool's own store (refreshed before answering): the workspace is only read.
        async def run(args: dict[str, Any], env: ExecutionEnvironment, ctx: ToolContext) -> str | ToolOutput:
            async with lock:
                await asyncio.to_thread(index.ensure_fresh)
            try:
                return await asyncio.to_thread(answer, args)
            except CodeIndexError as exc:
                return ToolOutput(str(exc), is_error=True)

        return RegisteredTool(definition, run, reads("path"))

    return [
        tool(SEARCH_CODE, lambda a: format_hits(a["query"], index.search(
            a["query"], a.get("limit", 10), a.get("mode", "auto"), a.get("path", "")))),
        tool(FIND_SYMBOL, lambda a: format_symbols(a["name"], index.symbols(
            a.get("path"), a["name"], a.get("kind"), a.get("limit", 50)))),
        tool(IMPACT, lambda a: format_impact(index.impact(a["path"]))),
    ]
