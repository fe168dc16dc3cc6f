"""OpenAI Responses API adapter (unified-llm spec §2.7, §3.9, §7.3, §7.7).

Native ``POST {base_url}/responses`` over httpx (``base_url`` defaults to
``https://api.openai.com/v1``), streaming included. Translation rules:

- SYSTEM messages become ``instructions``; DEVELOPER messages stay in place as
  ``developer`` message items. Every message item carries ``"type": "message"``
  (llama.cpp's ``/v1/responses`` rejects items without it).
- Assistant tool calls become top-level ``function_call`` items (``call_id`` = our id,
  ``arguments`` as JSON text); TOOL messages become ``function_call_output`` items.
- Reasoning items round-trip: a ``reasoning`` output item becomes a THINKING part whose
  text is the summary and whose ``signature`` is an opaque JSON holding the item id and
  ``encrypted_content``; sent back, it is the same ``reasoning`` item again. THINKING
  parts of other providers (no such signature) are not sent.
- ``reasoning_effort`` → ``reasoning.effort``; ``response_format`` → ``text.format``;
  ``max_tokens`` → ``max_output_tokens``; stop sequences do not exist in this API and are
  dropped with a Warning on the response.
- ``provider_options["openai"]`` is merged into the body (``include``, ``store``,
  ``reasoning.summary``, built-in tools via ``tools`` ...); a dict merges into the dict the
  adapter built.

This module is over 500 lines on purpose: one file per wire API (STYLE §6), holding that
API's request translation, response parsing, stream state and adapter class together.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import httpx

from codeloop.llm.adapters.base import AdapterTimeout
from codeloop.llm.adapters.content_encoding import (
    arguments_text,
    data_uri,
    is_local_path,
    merge_options,
    options_for,
    put_present,
    result_text,
)
from codeloop.llm.adapters.flow import (
    MALFORMED,
    HTTPAdapter,
    WireCall,
    decode_json_event,
    require_api_key,
    unexpected_shape,
    usage_from,
)
from codeloop.llm.errors import InvalidRequestError, SDKError, error_in_answer
from codeloop.llm.sse import SSEEvent, require_final_event
from codeloop.llm.types import (
    ContentKind,
    ContentPart,
    FinishReason,
    ImageData,
    Message,
    RateLimitInfo,
    Request,
    Response,
    Role,
    StreamEvent,
    StreamEventType,
    ThinkingData,
    ToolCall,
    ToolCallData,
    Warning,
    tool_arguments_or_raw,
    tool_call_from_data,
)

PROVIDER = "openai"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
_SIGNATURE_KEY = "openai_reasoning_id"

_INCOMPLETE = {"max_output_tokens": FinishReason.LENGTH, "content_filter": FinishReason.CONTENT_FILTER}

# ``response.failed`` and the stream ``error`` event carry a code but no HTTP status;
# these are the statuses OpenAI's error-codes guide pairs with them.
_CODE_STATUS = {
    "server_error": 500,
    "rate_limit_exceeded": 429,
    "insufficient_quota": 429,
    "invalid_prompt": 400,
    "invalid_request_error": 400,
    "context_length_exceeded": 400,
    "invalid_api_key": 401,
    "model_not_found": 404,
}

# Stream events that carry nothing the unified model needs beyond what other events carry.
_QUIET_EVENTS = frozenset({
    "response.in_progress",
    "response.queued",
    "response.content_part.added",
    "response.content_part.done",
    "response.output_text.done",
    "response.output_text.annotation.added",
    "response.refusal.done",
    "response.function_call_arguments.done",
    "response.reasoning_summary_part.added",
    "response.reasoning_summary_part.done",
    "response.reasoning_summary_text.done",
    "response.reasoning_text.done",
})


def map_openai_event_error(error: Any, raw: dict[str, Any]) -> SDKError:
    """The error of a ``response.failed`` response or a stream ``error`` event."""
    return error_in_answer(
        PROVIDER, raw, error, missing="the response failed without a message", code_keys=("code", "type"),
        statuses=_CODE_STATUS, default_code="server_error",
    )


# ---------------------------------------------------------------- request


def reasoning_signature(item_id: str, encrypted_content: str | None) -> str:
    """The opaque THINKING signature that brings a reasoning item back unchanged."""
    return json.dumps({_SIGNATURE_KEY: item_id, "encrypted_content": encrypted_content}, separators=(",", ":"))


def _reasoning_item(thinking: ThinkingData) -> dict[str, Any] | None:
    try:
        fields = json.loads(thinking.signature or "")
    except json.JSONDecodeError:
        return None
    if not isinstance(fields, dict) or not isinstance(fields.get(_SIGNATURE_KEY), str):
        return None
    item: dict[str, Any] = {
        "type": "reasoning",
        "id": fields[_SIGNATURE_KEY],
        "summary": [{"type": "summary_text", "text": thinking.text}] if thinking.text else [],
    }
    if fields.get("encrypted_content"):
        item["encrypted_content"] = fields["encrypted_content"]
    return item


def _user_content(part: ContentPart) -> dict[str, Any] | None:
    if part.kind == ContentKind.TEXT:
        return {"type": "input_text", "text": part.text or ""}
    if part.kind == ContentKind.IMAGE and part.image is not None:
        uri = data_uri(part.image, "image/png")
        return {"type": "input_image", "image_url": uri, "detail": part.image.detail or "auto"}
    if part.kind == ContentKind.DOCUMENT and part.document is not None:
        doc = part.document
        if doc.data is None and doc.url and not is_local_path(doc.url):
            return {"type": "input_file", "file_url": doc.url}
        uri = data_uri(doc, "application/pdf")
        return {"type": "input_file", "filename": doc.file_name or "document.pdf", "file_data": uri}
    if part.kind == ContentKind.AUDIO:
        raise InvalidRequestError(
            "openai: the Responses API does not accept audio input parts; transcribe the audio first",
            provider=PROVIDER,
        )
    return None


def _tool_output(part: ContentPart) -> dict[str, Any]:
    result = part.tool_result
    assert result is not None
    output: str | list[dict[str, Any]] = result_text(result.content)
    if result.image_data is not None:
        uri = data_uri(ImageData(data=result.image_data, media_type=result.image_media_type), "image/png")
        output = [{"type": "input_text", "text": output}, {"type": "input_image", "image_url": uri}]
    return {"type": "function_call_output", "call_id": result.tool_call_id, "output": output}


def _assistant_items(message: Message) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    texts: list[dict[str, Any]] = []

    def flush() -> None:
        if texts:
            items.append({"type": "message", "role": "assistant", "content": list(texts)})
            texts.clear()

    for part in message.content:
        if part.kind == ContentKind.TEXT and part.text:
            texts.append({"type": "output_text", "text": part.text})
        elif part.kind == ContentKind.TOOL_CALL and part.tool_call is not None:
            flush()
            call = part.tool_call
            items.append(
                {"type": "function_call", "call_id": call.id, "name": call.name, "arguments": arguments_text(call.arguments)}
            )
        elif part.kind == ContentKind.THINKING and part.thinking is not None:
            reasoning = _reasoning_item(part.thinking)
            if reasoning is not None:
                flush()
                items.append(reasoning)
    flush()
    return items


def translate_input(messages: list[Message]) -> tuple[str | None, list[dict[str, Any]]]:
    """(instructions, input items) for ``messages`` (§7.3)."""
    instructions: list[str] = []
    items: list[dict[str, Any]] = []
    for message in messages:
        if message.role == Role.SYSTEM:
            instructions.append(message.text)
        elif message.role == Role.ASSISTANT:
            items.extend(_assistant_items(message))
        else:
            outputs = [_tool_output(p) for p in message.content if p.kind == ContentKind.TOOL_RESULT and p.tool_result]
            items.extend(outputs)
            content = [c for c in (_user_content(p) for p in message.content) if c is not None]
            if content:
                role = "developer" if message.role == Role.DEVELOPER else "user"
                items.append({"type": "message", "role": role, "content": content})
    text = "\n\n".join(t for t in instructions if t)
    return text or None, items


def _tools(request: Request) -> dict[str, Any]:
    if not request.tools:
        return {}
    body: dict[str, Any] = {
        "tools": [
            {"type": "function", "name": t.name, "description": t.description, "parameters": t.parameters, "strict": False}
            for t in request.tools
        ]
    }
    choice = request.tool_choice
    if choice is not None:
        body["tool_choice"] = (
            {"type": "function", "name": choice.tool_name} if choice.mode == "named" else choice.mode
        )
    return body


def translate_request(request: Request, *, stream: bool) -> tuple[dict[str, Any], list[Warning]]:
    """(body, warnings) of the Responses API call for ``request``."""
    warnings: list[Warning] = []
    instructions, items = translate_input(request.messages)
    body: dict[str, Any] = {"model": request.model, "input": items}
    if instructions:
        body["instructions"] = instructions
    body.update(_tools(request))
    put_present(body, max_output_tokens=request.max_tokens, temperature=request.temperature, top_p=request.top_p)
    if request.reasoning_effort:
        body["reasoning"] = {"effort": request.reasoning_effort}
    if request.metadata:
        body["metadata"] = dict(request.metadata)
    fmt = request.response_format
    if fmt is not None and fmt.type == "json":
        body["text"] = {"format": {"type": "json_object"}}
    elif fmt is not None and fmt.type == "json_schema":
        body["text"] = {
            "format": {"type": "json_schema", "name": "response", "schema": fmt.json_schema, "strict": fmt.strict}
        }
    if request.stop_sequences:
        warnings.append(
            Warning("openai: the Responses API has no stop sequences; stop_sequences were not sent",
                    code="unsupported_parameter")
        )
    if stream:
        body["stream"] = True
    merge_options(body, options_for(request.provider_options, PROVIDER), extend=("tools",))
    return body, warnings


# ---------------------------------------------------------------- response


def _reasoning_text(item: dict[str, Any]) -> str:
    pieces = [s.get("text") for s in item.get("summary") or [] if isinstance(s, dict)]
    if not any(pieces):
        pieces = [c.get("text") for c in item.get("content") or [] if isinstance(c, dict)]
    return "\n\n".join(str(p) for p in pieces if p)


def _parts(item: dict[str, Any], warnings: list[Warning]) -> list[ContentPart]:
    kind = item.get("type")
    if kind == "message":
        parts: list[ContentPart] = []
        for content in item.get("content") or []:
            ctype = content.get("type") if isinstance(content, dict) else None
            if ctype == "output_text":
                parts.append(ContentPart.of_text(str(content.get("text") or "")))
            elif ctype == "refusal":
                parts.append(ContentPart.of_text(str(content.get("refusal") or "")))
                warnings.append(Warning("openai: the model refused; the refusal is in the text", code="refusal"))
            else:
                warnings.append(Warning(f"openai: ignored message content of type {ctype!r}", code="unknown_content"))
        return parts
    if kind == "function_call":
        raw_args = item.get("arguments")
        arguments = tool_arguments_or_raw(raw_args) if isinstance(raw_args, str) else (raw_args or {})
        call = ToolCallData(id=str(item.get("call_id") or item.get("id") or ""), name=str(item.get("name") or ""),
                            arguments=arguments)
        return [ContentPart.of_tool_call(call)]
    if kind == "reasoning":
        signature = reasoning_signature(str(item.get("id") or ""), item.get("encrypted_content"))
        return [ContentPart.of_thinking(_reasoning_text(item), signature)]
    warnings.append(Warning(f"openai: ignored an output item of type {kind!r}", code="unknown_content"))
    return []


def _finish(body: dict[str, Any], parts: list[ContentPart]) -> FinishReason:
    status = str(body.get("status") or "completed")
    if status == "incomplete":
        details = body.get("incomplete_details")
        reason = str(details.get("reason")) if isinstance(details, dict) and details.get("reason") else "incomplete"
        return FinishReason(_INCOMPLETE.get(reason, FinishReason.OTHER), reason)
    if any(p.kind == ContentKind.TOOL_CALL for p in parts):
        return FinishReason(FinishReason.TOOL_CALLS, status)
    if status == "completed":
        return FinishReason(FinishReason.STOP, status)
    return FinishReason(FinishReason.ERROR if status == "failed" else FinishReason.OTHER, status)


def parse_response(
    body: dict[str, Any], *, rate_limit: RateLimitInfo | None = None, warnings: list[Warning] | None = None
) -> Response:
    """A Responses API response object → :class:`Response` (§7.5).

    A ``failed`` response raises the error it carries.
    """
    if body.get("status") == "failed":
        raise map_openai_event_error(body.get("error"), body)
    warnings = list(warnings or [])
    try:
        output = body.get("output")
        if not isinstance(output, list):
            raise TypeError("'output' is not a list")
        parts = [p for item in output if isinstance(item, dict) for p in _parts(item, warnings)]
        return Response(
            str(body.get("id") or ""), str(body.get("model") or ""), PROVIDER, Message(Role.ASSISTANT, parts),
            _finish(body, parts), usage_from(body.get("usage"), "input_tokens", "output_tokens"), raw=body,
            warnings=warnings, rate_limit=rate_limit,
        )
    except MALFORMED as exc:
        raise unexpected_shape(PROVIDER, "a response", exc, body) from exc


# ---------------------------------------------------------------- stream


def _partial_call(item: dict[str, Any], arguments: str) -> ToolCall:
    """A ``function_call`` item's call while its arguments are still arriving."""
    return ToolCall(str(item.get("call_id") or item.get("id") or ""), str(item.get("name") or ""), {}, arguments)


class _StreamState:
    """Turns Responses API stream events into unified events and the final response."""

    def __init__(self, rate_limit: RateLimitInfo | None, warnings: list[Warning]) -> None:
        self.rate_limit = rate_limit
        self.warnings = warnings
        self.items: dict[int, dict[str, Any]] = {}
        self.arguments: dict[int, list[str]] = {}
        self.index_of: dict[str, int] = {}
        self.text_started: set[str] = set()
        self.finished = False

    def feed(self, sse: SSEEvent) -> list[StreamEvent]:
        if sse.data.strip() == "[DONE]":
            return []  # not part of the Responses wire, but some gateways add it
        return self.on_event(decode_json_event(PROVIDER, sse.data))

    def end(self) -> list[StreamEvent]:
        require_final_event(PROVIDER, self.finished, "response.completed")
        return []

    def on_event(self, data: dict[str, Any]) -> list[StreamEvent]:
        kind = str(data.get("type") or "")
        if kind == "response.created":
            return [StreamEvent(StreamEventType.STREAM_START, raw=data)]
        if kind == "response.output_item.added":
            item = dict(data.get("item") or {})
            return self._item_added(self._index(data, item, new=True), item)
        if kind in ("response.output_text.delta", "response.refusal.delta"):
            text_id = str(data.get("item_id") or data.get("output_index"))
            events = [] if text_id in self.text_started else [StreamEvent(StreamEventType.TEXT_START, text_id=text_id)]
            self.text_started.add(text_id)
            events.append(StreamEvent(StreamEventType.TEXT_DELTA, delta=str(data.get("delta") or ""), text_id=text_id))
            return events
        if kind == "response.function_call_arguments.delta":
            return self._arguments_delta(self._index(data), str(data.get("delta") or ""))
        if kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            return [StreamEvent(StreamEventType.REASONING_DELTA, reasoning_delta=str(data.get("delta") or ""))]
        if kind == "response.output_item.done":
            item = dict(data.get("item") or {})
            return self._item_done(self._index(data, item), item)
        if kind in ("response.completed", "response.incomplete"):
            return [self._finish(dict(data.get("response") or {}))]
        if kind == "response.failed":
            response = data.get("response") or {}
            raise map_openai_event_error(response.get("error") if isinstance(response, dict) else None, data)
        if kind == "error":
            raise map_openai_event_error(data.get("error") if isinstance(data.get("error"), dict) else data, data)
        if kind in _QUIET_EVENTS:
            return []
        return [StreamEvent(StreamEventType.PROVIDER_EVENT, raw=data)]

    def _index(self, data: dict[str, Any], item: dict[str, Any] | None = None, new: bool = False) -> int:
        """The output position an event refers to.

        OpenAI sends ``output_index``; llama.cpp's ``/v1/responses`` only ``item_id`` (or
        the item itself), so positions are also tracked by item id.
        """
        if data.get("output_index") is not None:
            return int(data["output_index"])
        item_id = data.get("item_id") or (item or {}).get("id")
        if item_id is not None and str(item_id) in self.index_of:
            return self.index_of[str(item_id)]
        return len(self.items) if new or not self.items else max(self.items)

    def _item_added(self, index: int, item: dict[str, Any]) -> list[StreamEvent]:
        self.items[index] = item
        if item.get("id") is not None:
            self.index_of[str(item["id"])] = index
        if item.get("type") == "function_call":
            self.arguments[index] = []
            return [StreamEvent(StreamEventType.TOOL_CALL_START, tool_call=_partial_call(item, ""))]
        if item.get("type") == "reasoning":
            return [StreamEvent(StreamEventType.REASONING_START)]
        return []

    def _arguments_delta(self, index: int, piece: str) -> list[StreamEvent]:
        item = self.items.get(index, {})
        parts = self.arguments.setdefault(index, [])
        parts.append(piece)
        call = _partial_call(item, "".join(parts))
        return [StreamEvent(StreamEventType.TOOL_CALL_DELTA, delta=piece, tool_call=call)]

    def _item_done(self, index: int, item: dict[str, Any]) -> list[StreamEvent]:
        if item.get("type") == "function_call" and not item.get("arguments") and self.arguments.get(index):
            item["arguments"] = "".join(self.arguments[index])
        self.items[index] = item
        kind = item.get("type")
        if kind == "message":
            text_id = str(item.get("id") or index)
            return [StreamEvent(StreamEventType.TEXT_END, text_id=text_id)] if text_id in self.text_started else []
        if kind == "function_call":
            parts = _parts(item, [])
            assert parts[0].tool_call is not None
            return [StreamEvent(StreamEventType.TOOL_CALL_END, tool_call=tool_call_from_data(parts[0].tool_call))]
        if kind == "reasoning":
            return [StreamEvent(StreamEventType.REASONING_END)]
        return []

    def _finish(self, body: dict[str, Any]) -> StreamEvent:
        if not body.get("output") and self.items:
            # Some servers send a terminal response without its output; use the items seen.
            body = {**body, "output": [self.items[i] for i in sorted(self.items)]}
        self.finished = True
        response = parse_response(body, rate_limit=self.rate_limit, warnings=self.warnings)
        return StreamEvent.finish(response)


# ---------------------------------------------------------------- adapter


def _responses_url(base_url: str) -> str:
    base = base_url.rstrip("/")
    if not urlsplit(base).path:
        base += "/v1"  # a bare host (``http://127.0.0.1:8080``) means the /v1 API
    return base + "/responses"


class OpenAIAdapter(HTTPAdapter):
    """The OpenAI Responses API (§7.3). Safe for concurrent use; ``close()`` when done.

    ``api_key`` falls back to ``OPENAI_API_KEY``; ``base_url`` to ``OPENAI_BASE_URL``, then
    ``https://api.openai.com/v1``. A missing key raises ConfigurationError here.
    """

    def __init__(
        self, api_key: str | None = None, *, base_url: str | None = None,
        timeout: float | AdapterTimeout | None = None, default_headers: Mapping[str, str] | None = None,
        organization: str | None = None, transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        key = require_api_key(PROVIDER, api_key, "OPENAI_API_KEY")
        self._url = _responses_url(base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL)
        headers = {"authorization": f"Bearer {key}"}
        if organization:
            headers["openai-organization"] = organization
        headers.update(default_headers or {})
        super().__init__(PROVIDER, headers=headers, timeout=timeout, transport=transport)

    def build_call(self, request: Request, *, stream: bool) -> WireCall:
        body, warnings = translate_request(request, stream=stream)
        return WireCall(self._url, body, warnings)

    parser = staticmethod(parse_response)
    state_type = _StreamState
