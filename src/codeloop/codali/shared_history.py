"""The shared conversation history of a codali run, compacted near the context window (spec §4).

Every role call receives the whole history. When the estimated prompt reaches
``threshold`` (90 %) of the model's context window, the older messages are replaced by a
summary written by a cheaper summarizer model, and the most recent messages are kept
verbatim (spec §4: "Replace history with the summary + most recent messages").
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from codeloop.agent.history import History as TurnHistory
from codeloop.agent.history import native_messages
from codeloop.llm.types import ContentKind, Message, Role

CHARS_PER_TOKEN = 3
"""Estimate used for the 90 % check (no tokenizer for every provider). Code and JSON come
to about 3 characters a token, prose to 4: 3 errs on the side of compacting early."""

Summarize = Callable[[str], Awaitable[str]]
"""``async (transcript) -> summary``; the pipeline binds it to the summarizer model."""


def message_chars(message: Message) -> int:
    """Characters of a message as sent (text, tool arguments and tool results)."""
    total = 0
    for part in message.content:
        if part.kind == ContentKind.TEXT:
            total += len(part.text or "")
        elif part.kind == ContentKind.TOOL_CALL and part.tool_call is not None:
            total += len(str(part.tool_call.arguments)) + len(part.tool_call.name)
        elif part.kind == ContentKind.TOOL_RESULT and part.tool_result is not None:
            total += len(str(part.tool_result.content))
    return total + 8


def transcript(messages: list[Message]) -> str:
    """A plain-text rendering of ``messages`` for the summarizer."""
    lines = []
    for message in messages:
        body = message.text
        if not body:
            body = " ".join(
                f"[tool call {p.tool_call.name} {p.tool_call.arguments}]" if p.tool_call is not None
                else f"[tool result {str(p.tool_result.content)[:2000]}]" if p.tool_result is not None else ""
                for p in message.content)
        lines.append(f"{message.role}: {body}")
    return "\n\n".join(lines)


class History(TurnHistory):
    """Messages shared by all roles, oldest first; the builder's Session continues it."""

    def __init__(self, context_window_tokens: int, keep_recent: int = 6, threshold: float = 0.9) -> None:
        super().__init__(native_messages)
        self.context_window_tokens = context_window_tokens
        """The smallest context window among the role models."""
        self.keep_recent = keep_recent
        """Messages kept verbatim after a compaction."""
        self.threshold = threshold
        """Fraction of the window that triggers a compaction (spec §4: 90 %)."""
        self.compactions = 0
        """How many times the history was summarized."""

    add = TurnHistory.add_message

    def estimated_tokens(self, extra_chars: int = 0) -> int:
        """Estimated prompt tokens of the history plus ``extra_chars`` (system prompt, instructions)."""
        return (sum(message_chars(m) for m in self._messages) + extra_chars) // CHARS_PER_TOKEN

    async def fit(self, summarize: Summarize, extra_chars: int = 0, window_tokens: int | None = None,
                  *, force: bool = False) -> bool:
        """Compact when the prompt would reach the threshold of ``window_tokens`` (the called
        model's window less its reply; ``context_window_tokens`` by default), or with
        ``force`` (the server said the prompt was too long); True when it did."""
        window = window_tokens or self.context_window_tokens
        if not force and self.estimated_tokens(extra_chars) < self.threshold * window:
            return False
        messages = self._messages
        cut = max(0, len(messages) - self.keep_recent)
        # Never split a tool call from its result: start the kept tail at a non-tool message.
        while cut < len(messages) and messages[cut].role == Role.TOOL:
            cut += 1
        older, recent = messages[:cut], messages[cut:]
        if not older:
            return False
        summary = await summarize(transcript(older))
        self.restart([Message.user(f"Summary of the conversation so far:\n{summary}"), *recent])
        self.compactions += 1
        return True
