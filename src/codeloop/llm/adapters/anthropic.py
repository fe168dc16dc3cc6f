"""Anthropic Messages API adapter (unified-llm spec §2.7, §2.8, §2.10, §7.3, §7.7).

Native ``POST {base_url}/v1/messages`` over httpx, streaming included. Translation rules:

- SYSTEM and DEVELOPER messages become the ``system`` blocks, in order; TOOL messages
  become ``tool_result`` blocks in a user turn; consecutive same-role turns are merged,
  because the API requires strict user/assistant alternation.
- Thinking blocks go back with their ``signature`` byte for byte, redacted thinking with
  its opaque ``data``; thinking without a signature (from another provider) is dropped,
  since the API would reject it.
- ``ToolChoice`` none omits the tools (§5.3), unless the history already holds tool
  blocks (the API then requires the tools; they go with ``{"type": "none"}``);
  ``max_tokens`` defaults to 4096; ``reasoning_effort`` enables extended thinking with a
  budget of 1024 / 4096 / 16384 tokens (low / medium / high), raising ``max_tokens`` above
  the budget when needed; ``provider_options["anthropic"]["thinking"]`` overrides it.
- Prompt caching (§2.10): unless ``provider_options["anthropic"]["auto_cache"] is False``,
  ``cache_control: {"type": "ephemeral"}`` is put on the last system block, the last tool
  definition and the last block of the last user turn (three of the API's four
  breakpoints: the stable prefix, then everything up to the newest turn, so the next turn
  reads it back), and ``prompt-caching-2024-07-31`` joins the ``anthropic-beta`` header.
- ``provider_options["anthropic"]``: ``beta_headers`` (list, joined into ``anthropic-beta``),
  ``auto_cache`` (bool); every other key is merged into the request body.

Usage: ``reasoning_tokens`` is estimated (4 characters per token) from the thinking text,
since the API reports no separate count (§3.9); cache read/write come from
``cache_read_input_tokens`` / ``cache_creation_input_tokens``.

"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any

import httpx

from codeloop.llm.adapters.base import AdapterTimeout
from codeloop.llm.adapters.content_encoding import (
    append_turn,
    arguments_object,
    inline_media,
    merge_options,
    options_for,
    put_present,
    result_text,
    thinking_budget,
)
from codeloop.llm.adapters.flow import (
    MALFORMED,
    HTTPAdapter,
    WireCall,
    decode_json_event,
    require_api_key,
    unexpected_shape,
)
from codeloop.llm.errors import InvalidRequestError, error_in_answer
from codeloop.llm.sse import SSEEvent, require_final_event
from codeloop.llm.types import (
    ContentKind,
    ContentPart,
    FinishReason,
    ImageData,
    MediaData,
    Message,
    RateLimitInfo,
    Request,
    Response,
    Role,
    StreamEvent,
    StreamEventType,
    ToolCall,
    ToolCallData,
    Usage,
    Warning,
    tool_arguments_or_raw,
    tool_call_from_data,
)

PROVIDER = "anthropic"
DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 4096
CACHE_BETA = "prompt-caching-2024-07-31"
THINKING_BUDGETS = {"low": 1024, "medium": 4096, "high": 16384}
_EPHEMERAL = {"type": "ephemeral"}

_STOP_REASONS = {
    "end_turn": FinishReason.STOP,
    "stop_sequence": FinishReason.STOP,
    "max_tokens": FinishReason.LENGTH,
    "model_context_window_exceeded": FinishReason.LENGTH,
    "tool_use": FinishReason.TOOL_CALLS,
    "refusal": FinishReason.CONTENT_FILTER,
}

# In-stream ``error`` events carry a type but no status; these are the statuses the
# errors page pairs with each type (https://docs.claude.com/en/api/errors).
_ERROR_TYPE_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 529,
}


def _media_block(kind: str, media: MediaData, default_type: str) -> dict[str, Any]:
    inline = inline_media(media, default_type)
    if inline is None:
        return {"type": kind, "source": {"type": "url", "url": media.url}}
    media_type, data = inline
    return {"type": kind, "source": {"type": "base64", "media_type": media_type, "data": data}}


def _tool_result_block(part: ContentPart) -> dict[str, Any]:
    result = part.tool_result
    assert result is not None
    content: str | list[dict[str, Any]] = result_text(result.content)
    if result.image_data is not None:
        picture = ImageData(data=result.image_data, media_type=result.image_media_type)
        image = _media_block("image", picture, "image/png")
        content = ([{"type": "text", "text": content}] if content else []) + [image]
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": result.tool_call_id, "content": content}
    if result.is_error:
        block["is_error"] = True
    return block


def _block(part: ContentPart) -> dict[str, Any] | None:
    """The Messages API block for one part; None drops it (empty text, unsigned thinking)."""
    kind = part.kind
    if kind == ContentKind.TEXT:
        return {"type": "text", "text": part.text} if part.text else None
    if kind == ContentKind.IMAGE and part.image is not None:
        return _media_block("image", part.image, "image/png")
    if kind == ContentKind.DOCUMENT and part.document is not None:
        return _media_block("document", part.document, "application/pdf")
    if kind == ContentKind.AUDIO:
        raise InvalidRequestError(
            "anthropic: the Messages API does not accept audio input; transcribe it or use another provider",
            provider=PROVIDER,
        )
    if kind == ContentKind.TOOL_CALL and part.tool_call is not None:
        call = part.tool_call
        return {"type": "tool_use", "id": call.id, "name": call.name, "input": arguments_object(call.arguments)}
    if kind == ContentKind.TOOL_RESULT and part.tool_result is not None:
        return _tool_result_block(part)
    if kind == ContentKind.THINKING and part.thinking is not None:
        if not part.thinking.signature:
            return None
        return {"type": "thinking", "thinking": part.thinking.text, "signature": part.thinking.signature}
    if kind == ContentKind.REDACTED_THINKING and part.thinking is not None:
        # An empty payload is another provider's signature carrier (Gemini): not ours to send.
        return {"type": "redacted_thinking", "data": part.thinking.text} if part.thinking.text else None
    return None  # unknown kinds are provider extensions of other adapters


def translate_messages(messages: list[Message]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(system blocks, alternating turns) for ``messages`` (§7.3)."""
    system: list[dict[str, Any]] = []
    turns: list[dict[str, Any]] = []
    for message in messages:
        if message.role in (Role.SYSTEM, Role.DEVELOPER):
            system.extend({"type": "text", "text": p.text} for p in message.content if p.text)
            continue
        role = "assistant" if message.role == Role.ASSISTANT else "user"
        blocks = [b for b in (_block(p) for p in message.content) if b is not None]
        if blocks:
            append_turn(turns, role, "content", blocks)
    return system, turns


def _tool_choice(
    request: Request, turns: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]] | None, dict[str, Any] | None]:
    """(tools, tool_choice). Mode none omits the tools (§5.3), except when the history holds
    tool_use/tool_result blocks: the API then requires the tools, so they go with
    ``{"type": "none"}``.
    """
    if not request.tools:
        return None, None
    tools = [{"name": t.name, "description": t.description, "input_schema": t.parameters} for t in request.tools]
    choice = request.tool_choice
    if choice is not None and choice.mode == "none":
        used = any(b.get("type") in ("tool_use", "tool_result") for t in turns for b in t["content"])
        return (tools, {"type": "none"}) if used else (None, None)
    if choice is None or choice.mode == "auto":
        return tools, None if choice is None else {"type": "auto"}
    if choice.mode == "required":
        return tools, {"type": "any"}
    return tools, {"type": "tool", "name": choice.tool_name}


def _add_cache_breakpoints(body: dict[str, Any]) -> bool:
    """Mark system, tools and the newest user turn for caching; True when any was marked."""
    user = next((turn["content"] for turn in reversed(body["messages"]) if turn["role"] == "user"), None)
    marked = [blocks for blocks in (body.get("system"), body.get("tools"), user) if blocks]
    for blocks in marked:
        blocks[-1]["cache_control"] = dict(_EPHEMERAL)
    return bool(marked)


def translate_request(
    request: Request, *, stream: bool
) -> tuple[dict[str, Any], dict[str, str], list[Warning]]:
    """(body, extra headers, warnings) of the Messages API call for ``request``."""
    warnings: list[Warning] = []
    options = options_for(request.provider_options, PROVIDER)
    system, turns = translate_messages(request.messages)
    body: dict[str, Any] = {
        "model": request.model,
        "max_tokens": request.max_tokens if request.max_tokens is not None else DEFAULT_MAX_TOKENS,
        "messages": turns,
    }
    if system:
        body["system"] = system
    tools, tool_choice = _tool_choice(request, turns)
    put_present(body, tools=tools, tool_choice=tool_choice, temperature=request.temperature, top_p=request.top_p)
    if request.stop_sequences:
        body["stop_sequences"] = list(request.stop_sequences)
    if request.metadata and "user_id" in request.metadata:
        body["metadata"] = {"user_id": request.metadata["user_id"]}
    if request.reasoning_effort:
        budget = thinking_budget(PROVIDER, THINKING_BUDGETS, request.reasoning_effort)
        body["thinking"] = {"type": "enabled", "budget_tokens": budget}
        if body["max_tokens"] <= budget:
            body["max_tokens"] = budget + DEFAULT_MAX_TOKENS
    if request.response_format is not None and request.response_format.type != "text":
        warnings.append(Warning(
            "anthropic: the Messages API has no JSON mode; response_format was not sent "
            "(generate_object() puts the schema in the system prompt instead)", code="unsupported_parameter",
        ))
    if stream:
        body["stream"] = True
    merge_options(body, options, skip=("beta_headers", "auto_cache"))
    betas = options.get("beta_headers") or []
    if isinstance(betas, str):
        betas = [betas]
    betas = [str(b) for b in betas]
    if options.get("auto_cache", True) is not False and _add_cache_breakpoints(body):
        betas.append(CACHE_BETA)
    headers = {"anthropic-beta": ",".join(dict.fromkeys(betas))} if betas else {}
    return body, headers, warnings


def _usage(raw: Any, thinking_chars: int | None) -> Usage:
    usage = raw if isinstance(raw, dict) else {}
    input_tokens = int(usage.get("input_tokens") or 0)
    output_tokens = int(usage.get("output_tokens") or 0)
    read = usage.get("cache_read_input_tokens")
    write = usage.get("cache_creation_input_tokens")
    return Usage(
        input_tokens, output_tokens, input_tokens + output_tokens,
        reasoning_tokens=math.ceil(thinking_chars / 4) if thinking_chars is not None else None,
        cache_read_tokens=int(read) if read is not None else None,
        cache_write_tokens=int(write) if write is not None else None, raw=usage or None,
    )


def _part(block: dict[str, Any], warnings: list[Warning]) -> ContentPart | None:
    kind = block.get("type")
    if kind == "text":
        return ContentPart.of_text(str(block.get("text") or ""))
    if kind == "tool_use":
        raw_input = block.get("input")
        arguments = raw_input if isinstance(raw_input, (dict, str)) else {}
        call = ToolCallData(id=str(block.get("id") or ""), name=str(block.get("name") or ""), arguments=arguments)
        return ContentPart.of_tool_call(call)
    if kind == "thinking":
        return ContentPart.of_thinking(str(block.get("thinking") or ""), block.get("signature") or None)
    if kind == "redacted_thinking":
        return ContentPart.of_redacted_thinking(str(block.get("data") or ""))
    warnings.append(Warning(f"anthropic: ignored a content block of type {kind!r}", code="unknown_content"))
    return None


def parse_message(
    body: dict[str, Any], *, rate_limit: RateLimitInfo | None = None, warnings: list[Warning] | None = None
) -> Response:
    """A Messages API response body → :class:`Response` (§7.5)."""
    warnings = list(warnings or [])
    try:
        blocks = body.get("content")
        if not isinstance(blocks, list):
            raise TypeError("'content' is not a list")
        parts = [p for p in (_part(b, warnings) for b in blocks if isinstance(b, dict)) if p is not None]
        thinking = [len(p.thinking.text) for p in parts if p.kind == ContentKind.THINKING and p.thinking]
        raw_stop = body.get("stop_reason")
        reason = _STOP_REASONS.get(str(raw_stop), FinishReason.OTHER)
        return Response(
            str(body.get("id") or ""), str(body.get("model") or ""), PROVIDER, Message(Role.ASSISTANT, parts),
            FinishReason(reason, str(raw_stop) if raw_stop is not None else None),
            _usage(body.get("usage"), sum(thinking) if thinking else None),
            raw=body, warnings=warnings, rate_limit=rate_limit,
        )
    except MALFORMED as exc:
        raise unexpected_shape(PROVIDER, "a message", exc, body) from exc


class _StreamState:
    """Accumulates Messages API stream events into events and the final message body."""

    def __init__(self, rate_limit: RateLimitInfo | None, warnings: list[Warning] | None = None) -> None:
        self.rate_limit = rate_limit
        self.warnings = list(warnings or [])
        self.message: dict[str, Any] = {}
        self.blocks: dict[int, dict[str, Any]] = {}
        self.json_parts: dict[int, list[str]] = {}
        self.usage: dict[str, Any] = {}
        self.finished = False

    def feed(self, sse: SSEEvent) -> list[StreamEvent]:
        return self.on_event(sse.event, decode_json_event(PROVIDER, sse.data))

    def end(self) -> list[StreamEvent]:
        require_final_event(PROVIDER, self.finished, "message_stop")
        return []

    def on_event(self, name: str, data: dict[str, Any]) -> list[StreamEvent]:
        kind = data.get("type") or name
        if kind == "message_start":
            self.message = dict(data.get("message") or {})
            self.usage = dict(self.message.get("usage") or {})
            return [StreamEvent(StreamEventType.STREAM_START, raw=data)]
        if kind == "content_block_start":
            return self._start(int(data.get("index", len(self.blocks))), dict(data.get("content_block") or {}))
        if kind == "content_block_delta":
            return self._delta(int(data.get("index", 0)), dict(data.get("delta") or {}), data)
        if kind == "content_block_stop":
            return self._stop(int(data.get("index", 0)))
        if kind == "message_delta":
            delta = data.get("delta") or {}
            self.message["stop_reason"] = delta.get("stop_reason")
            self.message["stop_sequence"] = delta.get("stop_sequence")
            self.usage.update({k: v for k, v in (data.get("usage") or {}).items() if v is not None})
            return []
        if kind == "message_stop":
            self.finished = True
            response = parse_message(self.body(), rate_limit=self.rate_limit, warnings=self.warnings)
            return [StreamEvent.finish(response)]
        if kind == "error":
            raise error_in_answer(
                PROVIDER, data, data.get("error"), missing="error event without a message",
                statuses=_ERROR_TYPE_STATUS, default_code="api_error",
            )
        if kind == "ping":
            return []
        return [StreamEvent(StreamEventType.PROVIDER_EVENT, raw=data)]

    def body(self) -> dict[str, Any]:
        content = [self.blocks[i] for i in sorted(self.blocks)]
        return {**self.message, "content": content, "usage": self.usage}

    def _start(self, index: int, block: dict[str, Any]) -> list[StreamEvent]:
        self.blocks[index] = block
        kind = block.get("type")
        if kind == "text":
            block["text"] = str(block.get("text") or "")
            return [StreamEvent(StreamEventType.TEXT_START, text_id=str(index))]
        if kind == "tool_use":
            self.json_parts[index] = []
            call = ToolCall(str(block.get("id") or ""), str(block.get("name") or ""), {}, "")
            return [StreamEvent(StreamEventType.TOOL_CALL_START, tool_call=call)]
        if kind == "thinking":
            block["thinking"] = str(block.get("thinking") or "")
            return [StreamEvent(StreamEventType.REASONING_START)]
        return []

    def _delta(self, index: int, delta: dict[str, Any], raw: dict[str, Any]) -> list[StreamEvent]:
        block = self.blocks.get(index)
        kind = delta.get("type")
        if block is None:
            return [StreamEvent(StreamEventType.PROVIDER_EVENT, raw=raw)]
        if kind == "text_delta":
            piece = str(delta.get("text") or "")
            block["text"] = str(block.get("text") or "") + piece
            return [StreamEvent(StreamEventType.TEXT_DELTA, delta=piece, text_id=str(index))]
        if kind == "input_json_delta":
            piece = str(delta.get("partial_json") or "")
            parts = self.json_parts.setdefault(index, [])
            parts.append(piece)
            call = ToolCall(str(block.get("id") or ""), str(block.get("name") or ""), {}, "".join(parts))
            return [StreamEvent(StreamEventType.TOOL_CALL_DELTA, delta=piece, tool_call=call)] if piece else []
        if kind == "thinking_delta":
            piece = str(delta.get("thinking") or "")
            block["thinking"] = str(block.get("thinking") or "") + piece
            return [StreamEvent(StreamEventType.REASONING_DELTA, reasoning_delta=piece)]
        if kind == "signature_delta":
            block["signature"] = str(block.get("signature") or "") + str(delta.get("signature") or "")
            return []
        return [StreamEvent(StreamEventType.PROVIDER_EVENT, raw=raw)]

    def _stop(self, index: int) -> list[StreamEvent]:
        block = self.blocks.get(index)
        if block is None:
            return []
        kind = block.get("type")
        if kind == "text":
            return [StreamEvent(StreamEventType.TEXT_END, text_id=str(index))]
        if kind == "tool_use":
            raw = "".join(self.json_parts.get(index, []))
            block["input"] = tool_arguments_or_raw(raw) if raw else block.get("input") or {}
            data = ToolCallData(str(block.get("id") or ""), str(block.get("name") or ""), block["input"])
            return [StreamEvent(StreamEventType.TOOL_CALL_END, tool_call=tool_call_from_data(data))]
        if kind == "thinking":
            return [StreamEvent(StreamEventType.REASONING_END)]
        return []


class AnthropicAdapter(HTTPAdapter):
    """The Anthropic Messages API (§7.3). Safe for concurrent use; ``close()`` when done.

    ``api_key`` falls back to ``ANTHROPIC_API_KEY``; ``base_url`` to ``ANTHROPIC_BASE_URL``,
    then ``https://api.anthropic.com`` (a base URL already ending in ``/v1`` is accepted).
    A missing key raises ConfigurationError here, not at the first request. ToolChoice none
    is sent by omitting the tools (§5.3).
    """

    def __init__(
        self, api_key: str | None = None, *, base_url: str | None = None,
        timeout: float | AdapterTimeout | None = None, default_headers: Mapping[str, str] | None = None,
        api_version: str = API_VERSION, transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        key = require_api_key(PROVIDER, api_key, "ANTHROPIC_API_KEY")
        base = (base_url or os.environ.get("ANTHROPIC_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        self._url = base + ("/messages" if base.endswith("/v1") else "/v1/messages")
        headers = {"x-api-key": key, "anthropic-version": api_version, **dict(default_headers or {})}
        super().__init__(PROVIDER, headers=headers, timeout=timeout, transport=transport)

    def build_call(self, request: Request, *, stream: bool) -> WireCall:
        body, headers, warnings = translate_request(request, stream=stream)
        return WireCall(self._url, body, warnings, headers)

    parser = staticmethod(parse_message)
    state_type = _StreamState
