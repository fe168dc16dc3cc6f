"""What the console shows, as data: file changes of a run as diffs (never of a protected path),
and the transcript of a ``codeloop run`` session from its log."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath
from typing import Any

from codeloop.policy.model import FilesystemPolicy
from codeloop.policy.paths import matches
from codeloop.policy.presets import preset
from codeloop.spaces.operations import CREATE_FILE, EDIT_FILE, FILE_CHANGES

MAX_DIFF_LINES = 2000
"""Lines of one file change shown (a change is shown whole up to this)."""

_LANGS = {".py": "python", ".js": "javascript", ".ts": "typescript", ".go": "go", ".rs": "rust", ".sh": "bash",
          ".json": "json", ".md": "markdown", ".c": "c", ".h": "c", ".java": "java", ".toml": "toml"}


def _lang(path: str) -> str:
    return _LANGS.get(PurePosixPath(path).suffix.lower(), "")


def _protected(path: str, fs: FilesystemPolicy) -> str | None:
    """Why ``path``'s content must not be shown (the policy blocks it: ``.env``, keys), or None.

    What is shown comes from the operations message (what the caller sent), never from the
    disk, so this is a display rule on the path as named, not a verdict on a call: calls are
    judged only in the pipeline's POLICY step."""
    if not fs.enabled:
        return f"content of {path} not shown: file operations are disabled by the policy"
    hit = matches(path, fs.blocked_paths)
    if hit:
        return f"content of {path} not shown: the policy protects it (matches {hit!r})"
    return None


def _lines(sign: str, text: str) -> list[tuple[str, str]]:
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    return [(sign, line) for line in lines]


def operation_diffs(message: Mapping[str, Any], fs: FilesystemPolicy) -> list[dict[str, Any]]:
    """The change each file operation of an operations message makes, in order: ``type``,
    ``path``, ``op`` (its id) and ``lines`` (or ``hidden``, why it is not shown)."""
    ops = message.get("operations") if isinstance(message, Mapping) else None
    out: list[dict[str, Any]] = []
    for op in ops if isinstance(ops, list) else []:
        if not isinstance(op, dict) or op.get("type") not in FILE_CHANGES:
            continue
        op_id = op["id"] if isinstance(op.get("id"), str) else None
        path = op.get("path")
        if not isinstance(path, str):
            continue
        entry: dict[str, Any] = {"type": op["type"], "path": path, "op": op_id}
        hidden = _protected(path, fs)
        if hidden:
            out.append({**entry, "hidden": hidden})
            continue
        lines: list[tuple[str, str]] = []
        if op["type"] == CREATE_FILE and op.get("encoding", "utf-8") == "utf-8" and isinstance(op.get("content"), str):
            lines = _lines("+", op["content"])
        elif op["type"] == EDIT_FILE and isinstance(op.get("edits"), list):
            for edit in op["edits"]:
                if isinstance(edit, dict):
                    lines += _lines("-", str(edit.get("oldContent", ""))) + _lines("+", str(edit.get("newContent", "")))
        out.append({**entry, "lang": _lang(path), "lines": lines[:MAX_DIFF_LINES]})
    return out


def match_diffs(events: Sequence[tuple[int, Mapping[str, Any]]], diffs: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """The diff of each file event (by sequence number): the operation with the event's id, or
    else the next unused one of its type and path (events of operations without an id carry
    none). ``static/console.js`` matches live events the same way."""
    used: set[int] = set()
    out: dict[int, dict[str, Any]] = {}
    for seq, ev in events:
        if ev.get("type") not in FILE_CHANGES:
            continue
        for i, d in enumerate(diffs):
            if i in used:
                continue
            if (d["op"] == ev.get("operationId")) if ev.get("operationId") else \
                    (d["op"] is None and (d["type"], d["path"]) == (ev.get("type"), ev.get("path"))):
                used.add(i)
                out[seq] = d
                break
    return out


_LOCAL_SECRETS = preset("standard").filesystem.blocked_paths
_PATH_KEYS = ("path", "file_path", "filename", "target_file")
_CONTENT_KEYS = ("content", "old_string", "new_string", "patch", "input", "edits", "oldContent", "newContent")


def transcript(events: list[Any]) -> list[dict[str, Any]]:
    """The items of a session transcript: inputs, answers, tool calls with their output, approvals
    and rewind points. The arguments of a call that names a secret file (the standard
    preset's blocked paths: ``.env``, keys) are not shown, nor its output."""
    items: list[dict[str, Any]] = []
    secret_calls: set[str] = set()
    for ev in events:
        data = ev.data
        kind = ev.kind
        if kind == "user_input":
            items.append({"kind": "input", "at": ev.timestamp, "text": data.get("content", "")})
        elif kind == "assistant_text_end" and data.get("text"):
            items.append({"kind": "assistant", "at": ev.timestamp, "text": data["text"]})
        elif kind == "tool_call_start":
            args = data.get("arguments") or {}
            named = [str(args[k]) for k in _PATH_KEYS if isinstance(args.get(k), str)]
            secret = next((p for p in named if matches(p, _LOCAL_SECRETS)), None)
            if secret:
                secret_calls.add(str(data.get("call_id")))
                shown = {k: v for k, v in args.items() if k not in _CONTENT_KEYS}
                shown["(content)"] = f"not shown: {secret} is a protected path"
                args = shown
            items.append({"kind": "call", "at": ev.timestamp, "tool": data.get("tool_name", ""),
                          "call_id": data.get("call_id"), "arguments": args})
        elif kind == "tool_call_end":
            hidden = str(data.get("call_id")) in secret_calls
            items.append({"kind": "result", "at": ev.timestamp, "tool": data.get("tool_name", ""),
                          "error": data.get("error"),
                          "output": "(not shown: protected path)" if hidden else (data.get("output") or "")})
        elif kind in ("approval_pending", "approval_decided"):
            items.append({"kind": kind, "at": ev.timestamp, "text": data.get("summary") or
                          f"{data.get('decision', data.get('status', ''))} by {data.get('decided_by', '?')}",
                          "reason": data.get("reason", "")})
        elif kind == "checkpoint":
            items.append({"kind": "checkpoint", "at": ev.timestamp, "tool": data.get("tool_name", ""),
                          "step": data.get("step"), "paths": data.get("paths") or []})
        elif kind in ("budget", "context_compacted", "error", "warning"):
            items.append({"kind": kind, "at": ev.timestamp,
                          "text": data.get("message") or data.get("reason") or str(data)})
    return items
