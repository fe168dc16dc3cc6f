"""Search tools: ``grep`` and ``glob`` (loop spec §3.3, §3.5).

Both delegate to the environment (``env.grep`` uses ripgrep where available, ``env.glob``
sorts newest first and respects ``.gitignore``); the tools shape arguments and results.
"""

from __future__ import annotations

from typing import Any

from codeloop.environments.base import ExecutionEnvironment, GrepOptions
from codeloop.tools.effects import reads
from codeloop.tools.registry import RegisteredTool, ToolContext, make_tool

DEFAULT_MAX_RESULTS = 100


async def grep(args: dict[str, Any], env: ExecutionEnvironment, ctx: ToolContext) -> str:
    """Matches as ``path:line:text`` (or paths, or ``path:count``)."""
    options = GrepOptions(
        glob_filter=args.get("glob_filter"),
        case_insensitive=bool(args.get("case_insensitive", False)),
        max_results=args.get("max_results") or DEFAULT_MAX_RESULTS,
        output_mode=args.get("output_mode") or "content",
    )
    found = await env.grep(args["pattern"], args.get("path") or ".", options)
    return found if found.strip() else f"No matches found for pattern {args['pattern']!r}."


async def glob(args: dict[str, Any], env: ExecutionEnvironment, ctx: ToolContext) -> str:
    """Matching paths, newest first, one per line."""
    paths = await env.glob(args["pattern"], args.get("path") or ".")
    return "\n".join(paths) if paths else f"No files found matching {args['pattern']!r}."


GREP = "grep"
GLOB = "glob"
"""The tool names (their one spelling: others import them)."""


def grep_tool(description: str | None = None) -> RegisteredTool:
    """``grep(pattern, path?, glob_filter?, case_insensitive?, max_results?, output_mode?)``."""
    return make_tool(
        GREP,
        description
        or (
            "Search file contents using regex patterns (ripgrep syntax). Returns matching lines as "
            "path:line:text; output_mode files_with_matches lists paths, count gives path:N."
        ),
        {
            "pattern": {"type": "string", "description": "Regular expression to search for."},
            "path": {"type": "string", "description": "File or directory to search (default: the workspace root)."},
            "glob_filter": {"type": "string", "description": "Only search files matching this glob, e.g. \"*.py\"."},
            "case_insensitive": {"type": "boolean", "description": "Ignore case (default false)."},
            "max_results": {"type": "integer", "minimum": 1, "description": f"Maximum results (default {DEFAULT_MAX_RESULTS})."},
            "output_mode": {"type": "string", "enum": ["content", "files_with_matches", "count"], "description": "content (default), files_with_matches or count."},
        },
        ["pattern"],
        grep,
        reads("path"),
    )


def glob_tool(description: str | None = None) -> RegisteredTool:
    """``glob(pattern, path?)``."""
    return make_tool(
        GLOB,
        description
        or "Find files matching a glob pattern (e.g. \"**/*.ts\"). Returns paths sorted by modification "
        "time, newest first; .gitignore is respected.",
        {
            "pattern": {"type": "string", "description": "Glob pattern."},
            "path": {"type": "string", "description": "Base directory (default: the workspace root)."},
        },
        ["pattern"],
        glob,
        reads("path"),
    )
