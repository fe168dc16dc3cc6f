"""Answering an ``AGENT_REQUEST v1`` from the code index and the workspace (codali spec §2, §3).

Every need runs; a need that fails adds a warning to ``meta.warnings`` and no result
(spec §5), the others still answer. File access goes through an
:class:`~codeloop.environments.base.ExecutionEnvironment` (``LocalExecutionEnvironment``
by default), so no path can leave the repository. Index queries first refresh a stale
index (warning ``docdex_index_stale``). File content is complete unless
``content_budget`` characters are used up, in which case the cut result says so
(``truncated: true``, ``total_chars``) and a ``content_truncated: path`` warning is added.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

from codeloop.codali.request import AgentRequest, Need
from codeloop.codali.response import CodaliResponse
from codeloop.environments.base import ExecutionEnvironment
from codeloop.environments.errors import (
    FileNotFoundInWorkspaceError,
    PathOutsideWorkspaceError,
    WorkspaceError,
)
from codeloop.index import CodeIndex, CodeIndexError, NotIndexedError
from codeloop.tools.call_path import PipelineCall
from codeloop.tools.codali_tools import READ_TEXT, codali_pipeline
from codeloop.tools.outcomes import OperationError

WebSearch = Callable[[str], Awaitable[list[dict[str, Any]]]]
"""``async (query) -> hits``; absent by default (no network), which yields ``web_unavailable``."""


_READ_WARNINGS = {"not_found": "file_not_found", "outside_workspace": "path_outside_repo",
                  "not_text": "file_binary", "is_directory": "not_a_file"}
"""The spec's warning for each kind of failed read."""


class _Skip(Exception):
    """A need could not be answered; the message is the warning."""


class _Answerer:
    def __init__(self, index: CodeIndex, env: ExecutionEnvironment, content_budget: int | None,
                 web_search: WebSearch | None) -> None:
        self.index = index
        self.env = env
        self.reads = codali_pipeline(env)
        """File reads go through the pipeline (the bounded read, the POLICY step)."""
        self.budget = content_budget
        self.web_search = web_search
        self.warnings: list[str] = []

    async def refresh_index(self) -> None:
        """Build a missing index, refresh a stale one (in a thread: builds take seconds)."""
        state = await asyncio.to_thread(self.index.status)
        if state.stale:
            if state.exists:
                self.warnings.append("docdex_index_stale")
            await asyncio.to_thread(self.index.build)

    def _content(self, result: dict[str, Any], text: str, label: str) -> dict[str, Any]:
        if self.budget is not None and len(text) > self.budget:
            result["content"] = text[: self.budget]
            result["truncated"] = True
            result["total_chars"] = len(text)
            self.warnings.append(f"content_truncated: {label} ({self.budget} of {len(text)} chars)")
            self.budget = 0
        else:
            result["content"] = text
            if self.budget is not None:
                self.budget -= len(text)
        return result

    async def _read(self, path: str, start: int | None = None, end: int | None = None) -> tuple[str, int]:
        result = await self.reads.run(PipelineCall(READ_TEXT.name, {"path": path}))
        if result.is_error or not isinstance(result.data, str):
            error = result.data
            if isinstance(error, OperationError) and error.kind in _READ_WARNINGS:
                raise _Skip(f"{_READ_WARNINGS[error.kind]}: {path}")
            raise error if isinstance(error, WorkspaceError) else WorkspaceError(result.full_output, path=path)
        text = result.data
        if "\0" in text:
            raise _Skip(f"file_binary: {path}")
        lines = text.split("\n")
        if text.endswith("\n"):
            lines.pop()
        if start is None and end is None:
            return text, len(lines)
        first = max(1, start or 1)
        last = min(len(lines), end or len(lines))
        chunk = "\n".join(lines[first - 1:last])
        keeps_newline = bool(chunk) and (last < len(lines) or text.endswith("\n"))
        return chunk + "\n" if keeps_newline else chunk, len(lines)

    async def _lines(self, path: str, start: int | None, end: int | None, *, always_total: bool) -> dict[str, Any]:
        """A file.read/docdex.open result: the range read and the file's line count (always, or
        only with a range)."""
        text, total = await self._read(path, start, end)
        result: dict[str, Any] = {"path": path}
        if start is not None or end is not None:
            result.update(start_line=start or 1, end_line=min(end or total, total), total_lines=total)
        elif always_total:
            result["total_lines"] = total
        return self._content(result, text, path)

    async def run(self, need: Need) -> dict[str, Any]:
        handler = getattr(self, "need_" + need.type.replace(".", "_"))
        result: dict[str, Any] = await handler(need.params)
        return {"type": need.type, **result}

    # docdex -----------------------------------------------------------------------------

    async def need_docdex_search(self, p: Mapping[str, Any]) -> dict[str, Any]:
        hits = self.index.search(p["query"], p["limit"])
        return {"query": p["query"], "hits": [asdict(h) for h in hits]}

    async def need_docdex_snippet(self, p: Mapping[str, Any]) -> dict[str, Any]:
        try:
            path, first, last, text = self.index.snippet(p["doc_id"], p["window"])
        except NotIndexedError:
            raise _Skip(f"doc_not_found: {p['doc_id']}") from None
        return self._content({"doc_id": p["doc_id"], "path": path, "start_line": first, "end_line": last}, text,
                             p["doc_id"])

    async def need_docdex_open(self, p: Mapping[str, Any]) -> dict[str, Any]:
        path = p.get("path")
        start, end = p.get("start_line"), p.get("end_line")
        if path is None:
            doc_path, _, anchor = str(p["doc_id"]).partition("#L")
            path = doc_path
            if anchor.isdigit() and start is None and end is None:
                window = p.get("window", 15)
                start, end = max(1, int(anchor) - window), int(anchor) + window
        elif p.get("window") is not None and start is not None and end is None:
            end = start + p["window"]
        return await self._lines(path, start, end, always_total=True)

    def _file_query(self, p: Mapping[str, Any], what: str, action: Callable[[CodeIndex], Any]) -> Any:
        try:
            return action(self.index)
        except NotIndexedError:
            raise _Skip(f"file_not_found: {p['file']}") from None
        except (CodeIndexError, WorkspaceError, ValueError) as exc:
            raise _Skip(f"docdex_{what}_failed: {p.get('file', '')}: {exc}") from None

    async def need_docdex_symbols(self, p: Mapping[str, Any]) -> dict[str, Any]:
        symbols = self._file_query(p, "symbols", lambda ix: ix.symbols(p["file"]))
        return {"file": p["file"], "symbols": [asdict(s) for s in symbols]}

    async def need_docdex_ast(self, p: Mapping[str, Any]) -> dict[str, Any]:
        try:
            tree = self.index.ast(p["file"], p["max_depth"], p["max_nodes"])
        except FileNotFoundInWorkspaceError:
            raise _Skip(f"file_not_found: {p['file']}") from None
        except (WorkspaceError, ValueError, OSError) as exc:
            raise _Skip(f"docdex_ast_failed: {p['file']}: {exc}") from None
        if tree["truncated"]:
            self.warnings.append(f"ast_truncated: {p['file']} (max_nodes {p['max_nodes']})")
        return {"file": p["file"], "language": tree["language"], "truncated": tree["truncated"],
                "ast": tree["root"]}

    async def need_docdex_impact(self, p: Mapping[str, Any]) -> dict[str, Any]:
        report = self._file_query(p, "impact", lambda ix: ix.impact(p["file"]))
        return {"file": report.file, "inbound": list(report.inbound), "outbound": list(report.outbound)}

    async def need_docdex_impact_diagnostics(self, p: Mapping[str, Any]) -> dict[str, Any]:
        if p.get("file"):
            self._file_query(p, "impact", lambda ix: ix.impact(p["file"]))
        found = self._file_query(p, "impact", lambda ix: ix.diagnostics(p.get("file"), p["limit"]))
        result: dict[str, Any] = {"file": p["file"]} if p.get("file") else {}
        return {**result, "diagnostics": [asdict(d) for d in found]}

    async def need_docdex_tree(self, p: Mapping[str, Any]) -> dict[str, Any]:
        return {"maxDepth": p["maxDepth"], "tree": self.index.tree(p["maxDepth"], p["path"])}

    async def need_docdex_web(self, p: Mapping[str, Any]) -> dict[str, Any]:
        if self.web_search is None:
            raise _Skip("web_unavailable")
        try:
            hits = await self.web_search(p["query"])
        except Exception as exc:  # a web backend's failure is a warning, never a crash
            raise _Skip(f"web_unavailable: {exc}") from None
        return {"query": p["query"], "hits": hits}

    # file -------------------------------------------------------------------------------

    async def need_file_read(self, p: Mapping[str, Any]) -> dict[str, Any]:
        return await self._lines(p["path"], p.get("start_line"), p.get("end_line"), always_total=False)

    async def need_file_list(self, p: Mapping[str, Any]) -> dict[str, Any]:
        try:
            files = sorted(await self.env.glob(p["pattern"], p["root"]))
        except FileNotFoundInWorkspaceError:
            raise _Skip(f"file_not_found: {p['root']}") from None
        except PathOutsideWorkspaceError:
            raise _Skip(f"path_outside_repo: {p['root']}") from None
        result: dict[str, Any] = {"root": p["root"], "pattern": p["pattern"], "files": files[: p["limit"]]}
        if len(files) > p["limit"]:
            result["truncated"] = True
            result["total_files"] = len(files)
            self.warnings.append(f"file_list_truncated: {p['root']} ({p['limit']} of {len(files)})")
        return result


async def answer_request(
    request: AgentRequest,
    repo_root: str | Path,
    *,
    env: ExecutionEnvironment | None = None,
    index: CodeIndex | None = None,
    content_budget: int | None = None,
    web_search: WebSearch | None = None,
) -> CodaliResponse:
    """Run every need of ``request`` and return one :class:`CodaliResponse` (never raises
    for a failing need: it becomes a warning)."""
    started = time.monotonic()
    root = Path(await asyncio.to_thread(os.path.realpath, repo_root))
    if env is None:
        from codeloop.tools.call_path import open_environment

        env = open_environment(root, sandbox="off", network=True)
    answerer = _Answerer(index or CodeIndex(root), env, content_budget, web_search)
    answerer.warnings.extend(request.warnings)
    if any(n.type.startswith("docdex.") and n.type not in {"docdex.web", "docdex.ast"} for n in request.needs):
        try:
            await answerer.refresh_index()
        except (CodeIndexError, OSError, sqlite3.Error) as exc:
            answerer.warnings.append(f"docdex_index_unavailable: {exc}")
    results: list[dict[str, Any]] = []
    for need in request.needs:
        try:
            results.append(await answerer.run(need))
        except _Skip as skip:
            answerer.warnings.append(str(skip))
        except (OSError, sqlite3.Error, CodeIndexError, WorkspaceError, ValueError) as exc:
            # Anything else a need can hit is reported like a skip (spec §5), never raised;
            # for docdex.search, docdex.tree and file.list this is the spec's own warning.
            answerer.warnings.append(f"{need.type.replace('.', '_')}_failed: {exc}")
    return CodaliResponse(request.request_id, tuple(results), tuple(answerer.warnings), str(root),
                          int((time.monotonic() - started) * 1000))


def answer_request_sync(request: AgentRequest, repo_root: str | Path, **kwargs: Any) -> CodaliResponse:
    """Synchronous wrapper of :func:`answer_request` (not for use inside a running loop)."""
    return asyncio.run(answer_request(request, repo_root, **kwargs))
