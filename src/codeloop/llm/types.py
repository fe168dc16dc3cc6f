"""The unified data model of the LLM layer (unified-llm spec §3, §5.3, §5.4).

Every adapter translates its wire format to and from these values; nothing above
`codeloop.llm` ever sees a provider's JSON. All records are frozen dataclasses: build a
new one (``dataclasses.replace``) instead of mutating. List fields hold lists for
ergonomics; treat them as read-only.

Contracts worth knowing:
- ``ContentPart.kind`` is a :class:`ContentKind` or, for provider extensions, any string
  (§3.3). Exactly the data field matching the kind is populated.
- ``ToolCallData.arguments`` is a dict when the provider sent valid JSON, else the raw
  string; :attr:`Response.tool_calls` parses it and never raises: a call whose arguments
  are not a JSON object carries ``parse_error`` so the caller can answer the model with
  an error result (the model is untrusted input).
- Thinking blocks keep ``signature`` (and redacted blocks their opaque payload in
  ``ThinkingData.text``) byte for byte, so they round-trip to the provider (§3.5).

Over 500 lines because it is the whole §3 record set, mostly field docstrings; splitting
it would scatter one closed tagged union (ContentPart and its data records) across files.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from codeloop.llm.errors import ConfigurationError, InvalidToolCallError, SDKError


class Role(StrEnum):
    """Who produced a message (§3.2)."""

    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"
    DEVELOPER = "developer"


class ContentKind(StrEnum):
    """Discriminator of :class:`ContentPart` (§3.4)."""

    TEXT = "text"
    IMAGE = "image"
    AUDIO = "audio"
    DOCUMENT = "document"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"
    THINKING = "thinking"
    REDACTED_THINKING = "redacted_thinking"


@dataclass(frozen=True, slots=True)
class MediaData:
    """What every media input has: a URL (or local path) or inline bytes, and a MIME type (§3.5)."""

    url: str | None = None
    """URL of the media; a value starting with ``/``, ``./`` or ``~`` is a local file path."""
    data: bytes | None = None
    """Raw bytes (adapters base64-encode when the wire needs it)."""
    media_type: str | None = None
    """MIME type; adapters assume the kind's usual type (below) for data without one."""


@dataclass(frozen=True, slots=True)
class ImageData(MediaData):
    """An image (``image/png`` assumed), by URL/local path or inline bytes. Exactly one of url/data."""

    detail: str | None = None
    """Fidelity hint ``auto``/``low``/``high`` (OpenAI only; others ignore it)."""

    def __post_init__(self) -> None:
        if (self.url is None) == (self.data is None):
            raise ConfigurationError("ImageData needs exactly one of url or data")


@dataclass(frozen=True, slots=True)
class AudioData(MediaData):
    """Audio input (``audio/wav`` assumed), by URL or inline bytes."""


@dataclass(frozen=True, slots=True)
class DocumentData(MediaData):
    """A document such as a PDF (``application/pdf`` assumed), by URL or inline bytes."""

    file_name: str | None = None
    """Optional display name."""


@dataclass(frozen=True, slots=True)
class ToolCallData:
    """A tool invocation inside an assistant message (§3.5)."""

    id: str
    """Provider-assigned call id (synthetic ``call_<uuid>`` for providers without ids)."""
    name: str
    """Name of the tool the model called."""
    arguments: dict[str, Any] | str
    """Parsed JSON arguments, or the raw argument string when it did not parse."""
    type: str = "function"
    """``function`` (default) or ``custom``."""
    signature: str | None = None
    """Opaque provider signature tied to this call (Gemini thought signatures); round-trips."""


@dataclass(frozen=True, slots=True)
class ToolResultData:
    """The result of one tool call, sent back to the model (§3.5)."""

    tool_call_id: str
    """The :attr:`ToolCallData.id` this result answers."""
    content: str | dict[str, Any] | list[Any]
    """The tool's output, text or structured."""
    is_error: bool = False
    """True when the tool failed; the model sees it and can adjust."""
    image_data: bytes | None = None
    """Optional image produced by the tool."""
    image_media_type: str | None = None
    """MIME type of ``image_data``."""


@dataclass(frozen=True, slots=True)
class ThinkingData:
    """Model reasoning, kept verbatim for round-tripping (§3.5)."""

    text: str
    """Reasoning text; for redacted thinking, the provider's opaque payload."""
    signature: str | None = None
    """Provider signature that must be sent back unchanged with the same provider/model."""
    redacted: bool = False
    """True for redacted (opaque) thinking."""


@dataclass(frozen=True, slots=True)
class ContentPart:
    """One piece of a message: a tagged union keyed by ``kind`` (§3.3)."""

    kind: ContentKind | str
    """Which data field is populated; arbitrary strings are provider extensions."""
    text: str | None = None
    """Populated when kind is TEXT."""
    image: ImageData | None = None
    """Populated when kind is IMAGE."""
    audio: AudioData | None = None
    """Populated when kind is AUDIO."""
    document: DocumentData | None = None
    """Populated when kind is DOCUMENT."""
    tool_call: ToolCallData | None = None
    """Populated when kind is TOOL_CALL."""
    tool_result: ToolResultData | None = None
    """Populated when kind is TOOL_RESULT."""
    thinking: ThinkingData | None = None
    """Populated when kind is THINKING or REDACTED_THINKING."""

    @classmethod
    def of_text(cls, text: str) -> ContentPart:
        """A TEXT part."""
        return cls(kind=ContentKind.TEXT, text=text)

    @classmethod
    def of_image(cls, image: ImageData) -> ContentPart:
        """An IMAGE part."""
        return cls(kind=ContentKind.IMAGE, image=image)

    @classmethod
    def of_tool_call(cls, call: ToolCallData) -> ContentPart:
        """A TOOL_CALL part."""
        return cls(kind=ContentKind.TOOL_CALL, tool_call=call)

    @classmethod
    def of_tool_result(cls, result: ToolResultData) -> ContentPart:
        """A TOOL_RESULT part."""
        return cls(kind=ContentKind.TOOL_RESULT, tool_result=result)

    @classmethod
    def of_thinking(cls, text: str, signature: str | None = None) -> ContentPart:
        """A THINKING part (signature kept for round-tripping)."""
        return cls(kind=ContentKind.THINKING, thinking=ThinkingData(text=text, signature=signature))

    @classmethod
    def of_redacted_thinking(cls, data: str, signature: str | None = None) -> ContentPart:
        """A REDACTED_THINKING part carrying the provider's opaque ``data`` (and ``signature``)."""
        return cls(kind=ContentKind.REDACTED_THINKING, thinking=ThinkingData(data, signature, redacted=True))


@dataclass(frozen=True, slots=True)
class Message:
    """One turn of a conversation (§3.1)."""

    role: Role
    """Who produced this message."""
    content: list[ContentPart] = field(default_factory=list)
    """The message body, in order."""
    name: str | None = None
    """For tool messages (the tool's name) and developer attribution."""
    tool_call_id: str | None = None
    """Links a TOOL message to the call it answers."""

    @classmethod
    def system(cls, text: str) -> Message:
        """A system message holding ``text``."""
        return cls(role=Role.SYSTEM, content=[ContentPart.of_text(text)])

    @classmethod
    def developer(cls, text: str) -> Message:
        """A developer message holding ``text``."""
        return cls(role=Role.DEVELOPER, content=[ContentPart.of_text(text)])

    @classmethod
    def user(cls, text: str) -> Message:
        """A user message holding ``text``."""
        return cls(role=Role.USER, content=[ContentPart.of_text(text)])

    @classmethod
    def assistant(cls, text: str) -> Message:
        """An assistant message holding ``text``."""
        return cls(role=Role.ASSISTANT, content=[ContentPart.of_text(text)])

    @classmethod
    def tool_result(
        cls, tool_call_id: str, content: str | dict[str, Any] | list[Any], is_error: bool = False,
        name: str | None = None,
    ) -> Message:
        """A TOOL message answering call ``tool_call_id`` (``name``: the tool, for Gemini)."""
        result = ToolResultData(tool_call_id=tool_call_id, content=content, is_error=is_error)
        content = [ContentPart.of_tool_result(result)]
        return cls(role=Role.TOOL, content=content, name=name, tool_call_id=tool_call_id)

    @property
    def text(self) -> str:
        """Concatenation of all TEXT parts; empty string when there are none."""
        return "".join(p.text or "" for p in self.content if p.kind == ContentKind.TEXT)


_TOOL_NAME = re.compile(r"[a-zA-Z][a-zA-Z0-9_]*")


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """A tool as the model sees it: name, description, JSON Schema (§5.1, no handler)."""

    name: str
    """Identifier ``[a-zA-Z][a-zA-Z0-9_]*``, at most 64 characters (validated here)."""
    description: str
    """What the tool does, for the model."""
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})
    """JSON Schema of the arguments; the root must be ``{"type": "object"}``."""

    def __post_init__(self) -> None:
        if len(self.name) > 64 or not _TOOL_NAME.fullmatch(self.name):
            raise ConfigurationError(
                f"tool name {self.name!r} is invalid: use letters, digits and '_', "
                "start with a letter, at most 64 characters"
            )
        if not isinstance(self.parameters, dict) or self.parameters.get("type") != "object":
            raise ConfigurationError(
                f"tool {self.name!r}: parameters must be a JSON Schema with \"type\": \"object\" at the root"
            )


TOOL_CHOICE_MODES = ("auto", "none", "required", "named")


@dataclass(frozen=True, slots=True)
class ToolChoice:
    """Whether and how the model must use tools (§5.3)."""

    mode: str = "auto"
    """``auto``, ``none``, ``required`` or ``named``."""
    tool_name: str | None = None
    """The tool to call; required when mode is ``named``."""

    def __post_init__(self) -> None:
        if self.mode not in TOOL_CHOICE_MODES:
            raise ConfigurationError(
                f"tool choice mode {self.mode!r} is unknown; use one of {', '.join(TOOL_CHOICE_MODES)}"
            )
        if self.mode == "named" and not self.tool_name:
            raise ConfigurationError("tool choice mode 'named' needs tool_name")

    @classmethod
    def auto(cls) -> ToolChoice:
        """The model decides."""
        return cls("auto")

    @classmethod
    def none(cls) -> ToolChoice:
        """The model must not call tools."""
        return cls("none")

    @classmethod
    def required(cls) -> ToolChoice:
        """The model must call at least one tool."""
        return cls("required")

    @classmethod
    def named(cls, tool_name: str) -> ToolChoice:
        """The model must call ``tool_name``."""
        return cls("named", tool_name)


@dataclass(frozen=True, slots=True)
class ResponseFormat:
    """Requested output shape (§3.10)."""

    type: str = "text"
    """``text``, ``json`` or ``json_schema``."""
    json_schema: dict[str, Any] | None = None
    """The schema; required when type is ``json_schema``."""
    strict: bool = False
    """Ask the provider to enforce the schema strictly."""

    def __post_init__(self) -> None:
        if self.type not in ("text", "json", "json_schema"):
            raise ConfigurationError(
                f"response format type {self.type!r} is unknown; use text, json or json_schema"
            )
        if self.type == "json_schema" and self.json_schema is None:
            raise ConfigurationError("response format 'json_schema' needs json_schema")


@dataclass(frozen=True, slots=True)
class Request:
    """The single input of ``complete()`` and ``stream()`` (§3.6)."""

    model: str
    """The provider's native model id."""
    messages: list[Message]
    """The conversation, oldest first."""
    provider: str | None = None
    """Adapter to route to; the client's default when None."""
    tools: list[ToolDefinition] | None = None
    """Tools the model may call."""
    tool_choice: ToolChoice | None = None
    """How tools may be used; AUTO when tools are present and this is None."""
    response_format: ResponseFormat | None = None
    """Text, JSON or JSON Schema output."""
    temperature: float | None = None
    """Sampling temperature; provider default when None."""
    top_p: float | None = None
    """Nucleus sampling; provider default when None."""
    max_tokens: int | None = None
    """Output token cap; provider default when None (Anthropic adapter uses 4096)."""
    stop_sequences: list[str] | None = None
    """Strings that end generation."""
    reasoning_effort: str | None = None
    """``low``/``medium``/``high``; None omits the parameter."""
    metadata: dict[str, str] | None = None
    """Arbitrary key-value pairs passed to providers that accept them."""
    provider_options: dict[str, Any] | None = None
    """Escape hatch, keyed by provider name (``{"anthropic": {...}}``); not portable."""


@dataclass(frozen=True, slots=True)
class FinishReason:
    """Why generation stopped: unified ``reason`` plus the provider's ``raw`` value (§3.8)."""

    reason: str
    """``stop``, ``length``, ``tool_calls``, ``content_filter``, ``error`` or ``other``."""
    raw: str | None = None
    """The provider's native string."""

    STOP = "stop"
    LENGTH = "length"
    TOOL_CALLS = "tool_calls"
    CONTENT_FILTER = "content_filter"
    ERROR = "error"
    OTHER = "other"


def _add_optional(a: int | None, b: int | None) -> int | None:
    if a is None and b is None:
        return None
    return (a or 0) + (b or 0)


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts of one call; ``+`` aggregates across calls (§3.9)."""

    input_tokens: int = 0
    """Prompt tokens."""
    output_tokens: int = 0
    """Generated tokens (reasoning included, as providers bill it)."""
    total_tokens: int = 0
    """input + output."""
    reasoning_tokens: int | None = None
    """Chain-of-thought tokens, when the provider reports or implies them."""
    cache_read_tokens: int | None = None
    """Prompt tokens served from the provider's cache."""
    cache_write_tokens: int | None = None
    """Prompt tokens written to the provider's cache."""
    raw: dict[str, Any] | None = None
    """The provider's usage object."""

    def __add__(self, other: Usage) -> Usage:
        """Sum of both; optional fields stay None only when None on both sides."""
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
            reasoning_tokens=_add_optional(self.reasoning_tokens, other.reasoning_tokens),
            cache_read_tokens=_add_optional(self.cache_read_tokens, other.cache_read_tokens),
            cache_write_tokens=_add_optional(self.cache_write_tokens, other.cache_write_tokens),
        )


@dataclass(frozen=True, slots=True)
class Warning:  # the spec's name (§3.11), shadowing the builtin inside this module only
    """A non-fatal issue reported with a response (§3.11)."""

    message: str
    """Human-readable description."""
    code: str | None = None
    """Machine-readable code."""


@dataclass(frozen=True, slots=True)
class RateLimitInfo:
    """Rate-limit state from response headers; informational only (§3.12)."""

    requests_remaining: int | None = None
    """Requests left in the current window."""
    requests_limit: int | None = None
    """Requests allowed per window."""
    tokens_remaining: int | None = None
    """Tokens left in the current window."""
    tokens_limit: int | None = None
    """Tokens allowed per window."""
    reset_at: float | None = None
    """When the window resets, as a Unix timestamp."""


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call extracted for execution (§5.4)."""

    id: str
    """Provider-assigned (or synthetic) call id."""
    name: str
    """Tool name."""
    arguments: dict[str, Any]
    """Parsed arguments; empty when they did not parse (see ``parse_error``)."""
    raw_arguments: str | None = None
    """The argument string as the model produced it."""
    parse_error: str | None = None
    """Why the raw arguments are not a JSON object; None when they parsed."""
    signature: str | None = None
    """Provider signature tied to the call (round-trips through ToolCallData)."""


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The outcome of executing a tool call (§5.4)."""

    tool_call_id: str
    """The :attr:`ToolCall.id` this answers."""
    content: str | dict[str, Any] | list[Any]
    """The tool's output."""
    is_error: bool = False
    """True when execution failed."""


def parse_tool_arguments(raw: str) -> dict[str, Any]:
    """Parse a tool call's argument string into a JSON object.

    An empty string means no arguments. Raises :class:`InvalidToolCallError` saying what
    is wrong when ``raw`` is not JSON or not an object.
    """
    if raw.strip() == "":
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise InvalidToolCallError(
            f"tool call arguments are not valid JSON ({exc.msg} at position {exc.pos}): {raw[:200]!r}",
            cause=exc,
        ) from exc
    except RecursionError:  # model output nested deeper than the decoder's recursion limit
        raise InvalidToolCallError(
            f"tool call arguments are nested too deeply to decode ({len(raw)} characters): {raw[:200]!r}"
        ) from None
    if not isinstance(value, dict):
        raise InvalidToolCallError(
            f"tool call arguments must be a JSON object, got {type(value).__name__}: {raw[:200]!r}"
        )
    return value


def tool_arguments_or_raw(raw: str) -> dict[str, Any] | str:
    """``raw`` as a JSON object when it is one, else ``raw`` itself (kept for the model to see)."""
    try:
        return parse_tool_arguments(raw)
    except InvalidToolCallError:
        return raw


def tool_call_from_data(data: ToolCallData) -> ToolCall:
    """The executable view of ``data``; never raises (bad arguments → ``parse_error``)."""
    if isinstance(data.arguments, dict):
        text = json.dumps(data.arguments)
        return ToolCall(data.id, data.name, data.arguments, text, signature=data.signature)
    try:
        args = parse_tool_arguments(data.arguments)
    except InvalidToolCallError as exc:
        return ToolCall(data.id, data.name, {}, data.arguments, exc.message, data.signature)
    return ToolCall(data.id, data.name, args, data.arguments, signature=data.signature)


@dataclass(frozen=True, slots=True)
class Response:
    """The result of one ``complete()`` call (§3.7)."""

    id: str
    """Provider-assigned response id."""
    model: str
    """Model that actually answered."""
    provider: str
    """Adapter that fulfilled the request."""
    message: Message
    """The assistant's reply."""
    finish_reason: FinishReason
    """Why generation stopped."""
    usage: Usage = field(default_factory=Usage)
    """Token counts."""
    raw: dict[str, Any] | None = None
    """The provider's response JSON, for debugging."""
    warnings: list[Warning] = field(default_factory=list)
    """Non-fatal issues."""
    rate_limit: RateLimitInfo | None = None
    """Rate-limit headers, when the provider sent them."""

    @property
    def text(self) -> str:
        """Concatenated text of the reply."""
        return self.message.text

    @property
    def tool_calls(self) -> list[ToolCall]:
        """Tool calls of the reply in order; malformed arguments show as ``parse_error``."""
        calls = [p.tool_call for p in self.message.content if p.kind == ContentKind.TOOL_CALL]
        return [tool_call_from_data(call) for call in calls if call is not None]

    @property
    def reasoning(self) -> str | None:
        """Concatenated readable thinking text, or None when there is none."""
        thinking = [p.thinking for p in self.message.content if p.kind == ContentKind.THINKING]
        parts = [t.text for t in thinking if t is not None]
        return "".join(parts) if parts else None


class StreamEventType(StrEnum):
    """Kinds of :class:`StreamEvent` (§3.14), plus ``step_finish`` of the tool loop (§5.9)."""

    STREAM_START = "stream_start"
    TEXT_START = "text_start"
    TEXT_DELTA = "text_delta"
    TEXT_END = "text_end"
    REASONING_START = "reasoning_start"
    REASONING_DELTA = "reasoning_delta"
    REASONING_END = "reasoning_end"
    TOOL_CALL_START = "tool_call_start"
    TOOL_CALL_DELTA = "tool_call_delta"
    TOOL_CALL_END = "tool_call_end"
    FINISH = "finish"
    ERROR = "error"
    PROVIDER_EVENT = "provider_event"
    STEP_FINISH = "step_finish"


@dataclass(frozen=True, slots=True)
class StreamEvent:
    """One normalized streaming event (§3.13). ``type`` says which fields are set.

    - TEXT_*: ``text_id``; TEXT_DELTA also ``delta``.
    - REASONING_DELTA: ``reasoning_delta``.
    - TOOL_CALL_START/DELTA: ``tool_call`` with id and name (arguments so far, raw string in
      ``raw_arguments``); TOOL_CALL_DELTA also ``delta`` (the new argument fragment);
      TOOL_CALL_END: the complete call.
    - FINISH and STEP_FINISH: ``finish_reason``, ``usage``, ``response``.
    - ERROR: ``error``.
    """

    type: StreamEventType | str
    """Discriminator."""
    delta: str | None = None
    """Incremental text (or tool-argument fragment for TOOL_CALL_DELTA)."""
    text_id: str | None = None
    """Which text segment a TEXT_* event belongs to."""
    reasoning_delta: str | None = None
    """Incremental reasoning text."""
    tool_call: ToolCall | None = None
    """Partial (START/DELTA) or complete (END) tool call."""
    finish_reason: FinishReason | None = None
    """Set on FINISH."""
    usage: Usage | None = None
    """Set on FINISH."""
    response: Response | None = None
    """The accumulated response, set on FINISH."""
    error: SDKError | None = None
    """Set on ERROR."""
    raw: dict[str, Any] | None = None
    """The provider event, for passthrough."""

    @classmethod
    def finish(cls, response: Response, kind: StreamEventType = StreamEventType.FINISH) -> StreamEvent:
        """The FINISH (or STEP_FINISH) event carrying ``response``, its finish reason and usage."""
        return cls(kind, finish_reason=response.finish_reason, usage=response.usage, response=response)
