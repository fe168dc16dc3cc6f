"""Conversation turns (loop spec §2.4) and their conversion to LLM messages.

:class:`History` converts each turn once, when it is appended, and keeps the converted
messages and a running character count: building a request is then a list copy, not a
re-serialization of the whole conversation (the hot path of a 500-round session).

Two conversions exist. *Native* profiles send assistant tool calls as structured parts
and results as TOOL messages. The *text* profile (models without tool calling) sends
the assistant's text verbatim and each round of results as one user message of
``<tool_result>`` blocks, the syntax its prompt teaches.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from codeloop.llm.types import (
    ContentKind,
    ContentPart,
    ImageData,
    Message,
    Role,
    ToolCall,
    ToolCallData,
    Usage,
)

SIGNATURES_KEPT = 1024
"""Recent tool-call signatures kept for loop detection (windows larger than this see fewer)."""


@dataclass(frozen=True)
class CallResult:
    """The result of one tool call as the model sees it (truncated)."""

    tool_call_id: str
    """Id of the call answered."""
    tool_name: str
    """Name of the tool that ran (or was asked for)."""
    content: str
    """Output after truncation, or the error text."""
    is_error: bool = False
    """True when the call failed; the model can read ``content`` and correct itself."""


@dataclass(frozen=True)
class _TextTurn:
    content: str
    """Sent to the model as a user message."""
    timestamp: float = field(default_factory=time.time)


@dataclass(frozen=True)
class UserTurn(_TextTurn):
    """Input from the user."""

    images: tuple[ImageData, ...] = ()
    """Images attached to the input (``codeloop run --image``, ``@shot.png`` in a chat)."""


def _user_message(turn: _TextTurn) -> Message:
    images = turn.images if isinstance(turn, UserTurn) else ()
    return Message(role=Role.USER, content=[ContentPart.of_text(turn.content),
                                            *(ContentPart.of_image(image) for image in images)])


@dataclass(frozen=True)
class AssistantTurn:
    """One reply of the model."""

    content: str
    """Text of the reply."""
    tool_calls: tuple[ToolCall, ...] = ()
    """Calls to execute (structured or recovered)."""
    reasoning: str | None = None
    """Reasoning text when exposed."""
    usage: Usage | None = None
    """Token counts of the call."""
    response_id: str | None = None
    """Provider response id."""
    message: Message | None = None
    """The provider's message verbatim (thinking signatures round-trip); None when the
    turn was rebuilt (recovered tool calls)."""
    timestamp: float = field(default_factory=time.time)


@dataclass(frozen=True)
class ToolResultsTurn:
    """The results of one round of tool calls, in call order."""

    results: tuple[CallResult, ...]
    """One per tool call."""
    timestamp: float = field(default_factory=time.time)


class SystemTurn(_TextTurn):
    """A note from the harness (not the user)."""


class SteeringTurn(_TextTurn):
    """A message injected between tool rounds (§2.6) or a loop warning (§2.10)."""


Turn = UserTurn | AssistantTurn | ToolResultsTurn | SystemTurn | SteeringTurn


def _assistant_message(turn: AssistantTurn) -> Message:
    if turn.message is not None:
        return turn.message
    parts = [ContentPart(kind=ContentKind.TEXT, text=turn.content)] if turn.content else []
    parts += [ContentPart(kind=ContentKind.TOOL_CALL, tool_call=ToolCallData(
        id=call.id, name=call.name, signature=call.signature,
        arguments=call.arguments if call.parse_error is None else (call.raw_arguments or "")))
        for call in turn.tool_calls]
    return Message(role=Role.ASSISTANT, content=parts)


def render_text_results(results: tuple[CallResult, ...]) -> str:
    """Tool results as the text profile shows them to the model."""
    return "\n".join(f'<tool_result name="{r.tool_name}" status="{"error" if r.is_error else "ok"}">\n'
                     f"{r.content}\n</tool_result>" for r in results)


def native_messages(turn: Turn) -> list[Message]:
    """Messages of one turn for profiles with native tool calling."""
    if isinstance(turn, _TextTurn):
        return [_user_message(turn)]
    if isinstance(turn, AssistantTurn):
        return [_assistant_message(turn)]
    return [Message.tool_result(r.tool_call_id, r.content, is_error=r.is_error, name=r.tool_name)
            for r in turn.results]


def text_messages(turn: Turn) -> list[Message]:
    """Messages of one turn for the text profile (no structured tool calls on the wire)."""
    if isinstance(turn, AssistantTurn):
        return [Message.assistant(turn.content)]
    if isinstance(turn, ToolResultsTurn):
        return [Message.user(render_text_results(turn.results))]
    return [_user_message(turn)]


def _turn_chars(turn: Turn) -> int:
    if isinstance(turn, ToolResultsTurn):
        return sum(len(r.content) for r in turn.results)
    if isinstance(turn, AssistantTurn):
        return len(turn.content) + sum(len(json.dumps(c.arguments)) for c in turn.tool_calls)
    return len(turn.content)


class History:
    """The ordered turns of a session, with their messages converted once on append."""

    def __init__(self, convert: Callable[[Turn], list[Message]] = native_messages) -> None:
        self.turns: list[Turn] = []
        self._messages: list[Message] = []
        self._convert = convert
        self.total_chars = 0
        """Characters of all turns, for the §5.5 estimate (1 token ≈ 4 characters)."""
        self.turn_count = 0
        """User and assistant turns, as counted against ``max_turns``."""
        self._signatures: deque[str] = deque(maxlen=SIGNATURES_KEPT)
        self._starts: list[int] = []

    def append(self, turn: Turn) -> None:
        """Add a turn and convert it."""
        self.turns.append(turn)
        self._starts.append(len(self._messages))
        self._messages.extend(self._convert(turn))
        self.total_chars += _turn_chars(turn)
        if isinstance(turn, UserTurn | AssistantTurn):
            self.turn_count += 1
        if isinstance(turn, AssistantTurn):
            self._signatures.extend(
                c.name + "\x00" + json.dumps(c.arguments, sort_keys=True, default=str) for c in turn.tool_calls)

    def replace_last(self, turn: Turn) -> None:
        """Put ``turn`` in place of the last turn (a reply a guard completed with a call)."""
        old = self.turns.pop()
        del self._messages[self._starts.pop():]
        self.total_chars -= _turn_chars(old)
        self.turn_count -= isinstance(old, UserTurn | AssistantTurn)
        self.append(turn)

    def add_message(self, message: Message) -> None:
        """Add a message that is no turn of this session (another party's, in a shared history)."""
        self._messages.append(message)
        self.total_chars += len(message.text)

    def restart(self, messages: list[Message]) -> None:
        """Go on from ``messages`` alone (a summarized conversation); the turns before are dropped."""
        self.turns, self._starts, self._messages = [], [], list(messages)
        self.total_chars = sum(len(m.text) for m in messages)

    def messages(self) -> list[Message]:
        """The conversation as LLM messages (a fresh list; messages are shared)."""
        return list(self._messages)

    def shorten_oldest_results(self, max_chars: int, keep_last: int = 1,
                               note: Callable[[CallResult], str] | None = None) -> list[tuple[int, CallResult]]:
        """Replace the output of the oldest tool results with a short note (``note(result)``)
        until the history holds at most ``max_chars`` characters (issue 10: small context
        windows). User input and the last ``keep_last`` result turns are never touched.
        Returns each result replaced, as it was, with the index of its turn (issue 36)."""
        def default_note(r: CallResult) -> str:
            return (f"[output of this earlier {r.tool_name} call removed to fit the context window; "
                    "run it again if you need it]")

        make_note = note or default_note
        result_turns = [i for i, t in enumerate(self.turns) if isinstance(t, ToolResultsTurn)]
        candidates = result_turns[:-keep_last] if keep_last else result_turns
        dropped: list[tuple[int, CallResult]] = []
        for i in candidates:
            if self.total_chars <= max_chars:
                break
            turn = self.turns[i]
            assert isinstance(turn, ToolResultsTurn)
            new = tuple(r if len(r.content) <= 200 else dataclasses.replace(r, content=make_note(r))
                        for r in turn.results)
            if new == turn.results:
                continue
            dropped += [(i, a) for a, b in zip(turn.results, new, strict=True) if a is not b]
            replaced = ToolResultsTurn(new, turn.timestamp)
            self.turns[i] = replaced
            self.total_chars += _turn_chars(replaced) - _turn_chars(turn)
            start = self._starts[i]
            old_len = len(self._convert(turn))
            self._messages[start:start + old_len] = self._convert(replaced)
        return dropped

    def recent_call_signatures(self, last: int) -> list[str]:
        """Signatures (name + canonical arguments) of the last ``last`` tool calls, oldest first
        (computed once per call on append; at most ``SIGNATURES_KEPT`` are kept)."""
        signatures = self._signatures
        return [signatures[i] for i in range(-min(last, len(signatures)), 0)]  # no copy of the whole deque
