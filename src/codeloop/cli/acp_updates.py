"""Session events as Agent Client Protocol session updates (``codeloop acp``, issue 38).

One translation, used live (:class:`UpdateTranslator`, a session listener) and for a loaded
session's history (:func:`replay_updates`, from the logged wire form). A tool call's ``kind``
comes from the tool's declared effects (``tools/effects.py``), never from its name: exec →
``execute``, write → ``edit``, network → ``fetch``, read only → ``read``, nothing declared →
``other``. A command's output is shown as text content of its tool call (commands never run
in the editor's terminals, which are outside codeloop's sandbox).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from acp import schema as s

from codeloop.agent import events as ev

Update = (s.UserMessageChunk | s.AgentMessageChunk | s.AgentThoughtChunk | s.ToolCallStart | s.ToolCallProgress
          | s.UsageUpdate | s.CurrentModeUpdate | s.AgentPlanUpdate)
"""The session updates codeloop sends."""


def plan_update(answer: str) -> s.AgentPlanUpdate | None:
    """The ``plan`` update of a plan-mode answer: the items of its first top-level numbered
    list, each a pending entry (plan mode asks the model to end with exactly that list);
    None when the answer holds no numbered list. Read with a Markdown parser (markdown-it),
    so what counts as a list item is CommonMark's rule, not a pattern of words."""
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").parse(answer)
    entries: list[str] = []
    depth = 0
    inside = False
    for token in tokens:
        if token.type == "ordered_list_open" and depth == 0 and not entries:
            inside = True
        if token.type.endswith("_list_open"):
            depth += 1
        elif token.type.endswith("_list_close"):
            depth -= 1
            if depth == 0 and inside:
                break
        elif inside and depth == 1 and token.type == "list_item_open":
            entries.append("")
        elif inside and depth == 1 and token.type == "inline" and entries and not entries[-1]:
            entries[-1] = token.content.strip()  # the item's first paragraph
    entries = [e for e in entries if e]
    if not entries:
        return None
    return s.AgentPlanUpdate(session_update="plan", entries=[
        s.PlanEntry(content=e, priority="medium", status="pending") for e in entries])

OUTPUT_TAIL = 8000
"""Characters of a running command's output shown in its tool call (the tail: the newest)."""
SHOWN_RESULT = 20000
"""Characters of a finished call's result shown (the model got its own truncated form)."""


def _text(text: str) -> s.TextContentBlock:
    return s.TextContentBlock(type="text", text=text)


def _content(text: str) -> list[Any]:
    return [s.ContentToolCallContent(type="content", content=_text(text))]


def tool_kind(effects: frozenset[str] | None) -> str:
    """The ACP ``ToolKind`` of a tool declaring ``effects`` (values of ``Effect``)."""
    if not effects:
        return "other"
    if "exec" in effects:
        return "execute"
    if "write" in effects:
        return "edit"
    if "network" in effects:
        return "fetch"
    return "read"


class ToolInfo:
    """What the translation needs of a tool: its effects, the paths and command of a call."""

    def __init__(self, registry: Any, window: int = 0) -> None:
        self.registry = registry
        self.window = window
        """The model's context window in tokens (0: unknown; no usage update is sent)."""

    def describe(self, name: str, arguments: Mapping[str, Any], root: str) -> tuple[str, str, list[str]]:
        """(kind, title, absolute paths) of a call; an unknown tool is ``other``."""
        tool = self.registry.get(name) if self.registry is not None else None
        if tool is None:
            return "other", name, []
        declared = tool.effects
        kind = tool_kind(frozenset(str(e.value) for e in declared.effects))
        try:
            paths = list(declared.paths_of(arguments) or ())
            command = declared.command(arguments) if declared.command is not None else None
        except Exception:  # arguments the model got wrong: the call's own result says so
            paths, command = [], None
        absolute = [os.path.normpath(os.path.join(root, p)) for p in paths if isinstance(p, str)]
        title = command or (f"{name} {' '.join(paths)}" if paths else name)
        return kind, title[:200], absolute


class UpdateTranslator:
    """A session listener turning events into updates, handed to ``send`` in order. Also the
    ``Renderer`` stand-in of :class:`codeloop.cli.run.Runner` (``pause``, ``pending_lines``)."""

    def __init__(self, send: Callable[[Update], None], tools: Callable[[], ToolInfo], root: str) -> None:
        self.send, self.tools, self.root = send, tools, root
        self.pending_lines = False
        self.outputs: dict[str, str] = {}
        self.paths: dict[str, list[str]] = {}
        """The absolute paths each running call names (its diffs are looked up by them)."""
        self.changes: dict[str, tuple[str | None, str]] = {}
        """Files changed and not yet shown: path → (text before, text after)."""
        self.last_error = ""
        """The message of the last fatal error (the prompt fails with it)."""

    def pause(self) -> None:
        """Nothing to hide: there is no status line."""

    def changed(self, path: str, old: str | None, new: str) -> None:
        """A file was written or deleted (``environments/editor_buffers.py``); shown as a diff
        when the call naming it ends. Several writes of one call keep the first "before"."""
        before = self.changes[path][0] if path in self.changes else old
        self.changes[path] = (before, new)

    def __call__(self, event: ev.SessionEvent) -> None:
        for update in self.translate(event):
            self.send(update)

    def translate(self, event: ev.SessionEvent) -> list[Update]:
        match event:
            case ev.AssistantTextDelta():
                return [s.AgentMessageChunk(session_update="agent_message_chunk", content=_text(event.delta))]
            case ev.AssistantTextEnd():
                out: list[Update] = []
                if event.reasoning:
                    out.append(s.AgentThoughtChunk(session_update="agent_thought_chunk", content=_text(event.reasoning)))
                window = self.tools().window
                if window > 0 and event.input_tokens + event.output_tokens > 0:
                    # The context this call used: its prompt and its reply, against the window.
                    out.append(s.UsageUpdate(session_update="usage_update",
                                             used=event.input_tokens + event.output_tokens, size=window))
                return out
            case ev.ToolCallStart():
                kind, title, paths = self.tools().describe(event.tool_name, event.arguments, self.root)
                self.outputs[event.call_id] = ""
                self.paths[event.call_id] = paths
                return [s.ToolCallStart(
                    session_update="tool_call", tool_call_id=event.call_id, title=title, kind=kind,  # type: ignore[arg-type]
                    status="pending", raw_input=event.arguments,
                    locations=[s.ToolCallLocation(path=p) for p in paths] or None)]
            case ev.ToolCallOutputDelta():
                shown = (self.outputs.get(event.call_id, "") + event.delta)[-OUTPUT_TAIL:]
                self.outputs[event.call_id] = shown
                return [s.ToolCallProgress(session_update="tool_call_update", tool_call_id=event.call_id,
                                           status="in_progress", content=_content(shown))]
            case ev.ToolCallEnd():
                self.outputs.pop(event.call_id, None)
                text = event.error if event.error is not None else (event.output or "")
                content: list[Any] = []
                for path in self.paths.pop(event.call_id, []):
                    if path in self.changes:
                        before, after = self.changes.pop(path)
                        content.append(s.FileEditToolCallContent(type="diff", path=path, old_text=before,
                                                                 new_text=after))
                content += _content(text[:SHOWN_RESULT]) if text else []
                return [s.ToolCallProgress(
                    session_update="tool_call_update", tool_call_id=event.call_id,
                    status="failed" if event.is_error else "completed", content=content or None)]
            case ev.ApprovalDecided():
                if event.status == "approved":
                    return [s.ToolCallProgress(session_update="tool_call_update", tool_call_id=event.call_id,
                                               status="in_progress")]
                return []
            case ev.ErrorEvent():
                if event.fatal:
                    self.last_error = event.message
                return [s.AgentMessageChunk(session_update="agent_message_chunk",
                                            content=_text(f"\n\nerror: {event.message}\n"))]
            case ev.WarningEvent() | ev.Retry():
                return []
            case (ev.SessionStart() | ev.SessionEnd() | ev.UserInput() | ev.AssistantTextStart() | ev.ApprovalPending()
                  | ev.SteeringInjected() | ev.TurnLimit() | ev.LoopDetection() | ev.BudgetEvent()
                  | ev.ContextCompacted()):
                return []
        return []


def replay_updates(events: list[Any], tools: ToolInfo, root: str) -> list[Update]:
    """The updates that show a recorded session's history (``session/load``), from its logged
    events (``codeloop.sessions`` ``LoggedEvent``: ``kind`` and ``data``): the user's inputs,
    the answers, and each tool call with its end state."""
    out: list[Update] = []
    translator = UpdateTranslator(out.append, lambda: tools, root)
    for logged in events:
        data = logged.data
        if logged.kind == ev.EventKind.USER_INPUT:
            out.append(s.UserMessageChunk(session_update="user_message_chunk", content=_text(str(data.get("content", "")))))
        elif logged.kind == ev.EventKind.ASSISTANT_TEXT_END:
            if data.get("text") and not data.get("tool_call_count"):
                out.append(s.AgentMessageChunk(session_update="agent_message_chunk", content=_text(str(data["text"]))))
        elif logged.kind == ev.EventKind.TOOL_CALL_START:
            args = data.get("arguments")
            translator(ev.ToolCallStart(session_id="", tool_name=str(data.get("tool_name", "")),
                                        call_id=str(data.get("call_id", "")),
                                        arguments=args if isinstance(args, dict) else {}))
        elif logged.kind == ev.EventKind.TOOL_CALL_END:
            translator(ev.ToolCallEnd(session_id="", call_id=str(data.get("call_id", "")),
                                      tool_name=str(data.get("tool_name", "")),
                                      output=data.get("output"), error=data.get("error")))
    return out
