"""Gemini API adapter: generateContent and streamGenerateContent (unified-llm spec §7.3, §7.7).

Native ``POST {base_url}/models/{model}:generateContent`` (and
``:streamGenerateContent?alt=sse``) over httpx; ``base_url`` defaults to
``https://generativelanguage.googleapis.com/v1beta``. Translation rules:

- SYSTEM and DEVELOPER messages become ``systemInstruction``; ASSISTANT is role ``model``;
  TOOL results are ``functionResponse`` parts in a user turn; consecutive same-role turns
  are merged (parallel calls must be answered in one turn).
- Gemini assigns no call ids: each ``functionCall`` gets a synthetic ``call_<hex>`` id
  (a provider-sent ``functionCall.id`` is kept). A tool result finds its function name
  by that id in the conversation's assistant turns, then ``Message.name``, then the ids
  this adapter issued; an unknown id is an InvalidRequestError naming it.
- ``functionResponse.response`` is the result dict, or ``{"result": ...}`` for text and
  lists, or ``{"error": ...}`` when ``is_error``.
- Thought signatures round-trip: on a ``functionCall`` part in
  ``ToolCallData.signature``; on a ``thought`` part in the THINKING part; on a plain text
  (or empty) part as a REDACTED_THINKING part with empty text placed just before that
  text, merged back into the following text part when sent.
- ``reasoning_effort`` → ``thinkingConfig`` (``thinkingBudget`` 1024/8192/24576 for
  ``gemini-2*`` models, ``thinkingLevel`` otherwise); ``response_format`` →
  ``responseMimeType`` (+ ``responseJsonSchema``); ``provider_options["gemini"]`` merges into
  the body (``safetySettings``, ``cachedContent``, ``generationConfig`` keys ...).
- Schemas go in the JSON Schema fields (``parametersJsonSchema``, ``responseJsonSchema``),
  not the OpenAPI-subset ``parameters``/``responseSchema`` the spec's table names: tool
  schemas are full JSON Schema (``additionalProperties``, ``oneOf`` ...), which the subset
  rejects.
- The key goes in the ``x-goog-api-key`` header, or the ``key`` query parameter with
  ``key_in_query=True``.

Usage: ``output_tokens`` = ``candidatesTokenCount`` + ``thoughtsTokenCount`` (thoughts are
billed as output, as in the other adapters), ``reasoning_tokens`` = ``thoughtsTokenCount``,
``cache_read_tokens`` = ``cachedContentTokenCount``.

This module is over 500 lines on purpose: one file per wire API (STYLE §6), holding that
API's request translation, response parsing, stream state and adapter class together.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping
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
    thinking_budget,
)
from codeloop.llm.adapters.flow import (
    MALFORMED,
    HTTPAdapter,
    WireCall,
    decode_json_event,
    error_from_response,
    require_api_key,
    unexpected_shape,
)
from codeloop.llm.errors import (
    InvalidRequestError,
    ProviderError,
    QuotaExceededError,
    RateLimitError,
    SDKError,
    error_in_answer,
)
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
    tool_call_from_data,
)

PROVIDER = "gemini"
DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/v1beta"
THINKING_BUDGETS = {"low": 1024, "medium": 8192, "high": 24576}
_VERSIONED = re.compile(r"/v\d+(?:alpha|beta)?\d*$")
_MAX_REMEMBERED_IDS = 4096

_FINISH = {
    "STOP": FinishReason.STOP,
    "MAX_TOKENS": FinishReason.LENGTH,
    "SAFETY": FinishReason.CONTENT_FILTER,
    "RECITATION": FinishReason.CONTENT_FILTER,
    "BLOCKLIST": FinishReason.CONTENT_FILTER,
    "PROHIBITED_CONTENT": FinishReason.CONTENT_FILTER,
    "SPII": FinishReason.CONTENT_FILTER,
    "IMAGE_SAFETY": FinishReason.CONTENT_FILTER,
    "MALFORMED_FUNCTION_CALL": FinishReason.ERROR,
}


def _retry_delay(raw: Any) -> float | None:
    """Seconds from a ``google.rpc.RetryInfo`` detail (``"retryDelay": "37s"``), if any."""
    error = raw.get("error") if isinstance(raw, dict) else None
    details = error.get("details") if isinstance(error, dict) else None
    for detail in details if isinstance(details, list) else []:
        delay = detail.get("retryDelay") if isinstance(detail, dict) else None
        if isinstance(delay, str) and delay.endswith("s"):
            try:
                return float(delay[:-1])
            except ValueError:
                return None
    return None


def map_gemini_error(response: httpx.Response, body: bytes) -> SDKError:
    """HTTP error → §6 error: status table, gRPC ``error.status`` when the status is not in
    it, message signals; a ``RetryInfo.retryDelay`` stands in for a missing ``Retry-After``
    header and keeps a 429 worded "check quota" a (retryable) RateLimitError.
    """
    error = error_from_response(PROVIDER, response, body)
    if not isinstance(error, ProviderError):
        return error
    found = error.raw.get("error") if isinstance(error.raw, dict) else None
    if error.error_code is None and isinstance(found, dict) and isinstance(found.get("status"), str):
        error.error_code = found["status"]  # e.g. RESOURCE_EXHAUSTED; ``code`` is only the HTTP number
    delay = _retry_delay(error.raw)
    if isinstance(error, QuotaExceededError) and delay is not None:
        # Google words per-minute limits "check quota" too; a RetryInfo says waiting helps.
        return RateLimitError(
            error.message, provider=PROVIDER, status_code=error.status_code, error_code=error.error_code,
            retry_after=error.retry_after if error.retry_after is not None else delay, raw=error.raw,
        )
    if error.retry_after is None:
        error.retry_after = delay
    return error


# ---------------------------------------------------------------- request


def _media_part(media: MediaData, default_type: str) -> dict[str, Any]:
    inline = inline_media(media, default_type)
    if inline is None:
        return {"fileData": {"mimeType": media.media_type or default_type, "fileUri": media.url}}
    return {"inlineData": {"mimeType": inline[0], "data": inline[1]}}


def _function_response(part: ContentPart, names: Mapping[str, str], fallback: str | None) -> list[dict[str, Any]]:
    result = part.tool_result
    assert result is not None
    name = names.get(result.tool_call_id) or fallback
    if not name:
        raise InvalidRequestError(
            f"gemini: the tool result for call {result.tool_call_id!r} matches no tool call in the conversation; "
            "Gemini needs the function name (set Message.name or keep the assistant turn with the call)",
            provider=PROVIDER,
        )
    if result.is_error:
        response: dict[str, Any] = {"error": result.content}
    elif isinstance(result.content, dict):
        response = result.content
    else:
        response = {"result": result.content}
    parts: list[dict[str, Any]] = [{"functionResponse": {"name": name, "response": response}}]
    if result.image_data is not None:
        image = ImageData(data=result.image_data, media_type=result.image_media_type)
        parts.append(_media_part(image, "image/png"))
    return parts


def _parts(message: Message, names: Mapping[str, str], fallback_name: str | None) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    carried: str | None = None  # signature of a plain text part, waiting for that part
    for part in message.content:
        kind = part.kind
        native: dict[str, Any] | None = None
        if kind == ContentKind.TEXT and part.text:
            native = {"text": part.text}
        elif kind == ContentKind.IMAGE and part.image is not None:
            native = _media_part(part.image, "image/png")
        elif kind == ContentKind.AUDIO and part.audio is not None:
            native = _media_part(part.audio, "audio/wav")
        elif kind == ContentKind.DOCUMENT and part.document is not None:
            native = _media_part(part.document, "application/pdf")
        elif kind == ContentKind.TOOL_CALL and part.tool_call is not None:
            call = part.tool_call
            native = {"functionCall": {"name": call.name, "args": arguments_object(call.arguments)}}
            if call.signature:
                native["thoughtSignature"] = call.signature
        elif kind == ContentKind.TOOL_RESULT and part.tool_result is not None:
            out.extend(_function_response(part, names, fallback_name))
        elif kind == ContentKind.THINKING and part.thinking is not None and part.thinking.signature:
            native = {"text": part.thinking.text, "thought": True, "thoughtSignature": part.thinking.signature}
        elif kind == ContentKind.REDACTED_THINKING and part.thinking is not None and part.thinking.signature:
            if carried is not None:
                out.append({"text": "", "thoughtSignature": carried})
            carried = part.thinking.signature
            continue
        if native is None:
            continue
        if carried is not None:
            if "text" in native and "thought" not in native:
                native["thoughtSignature"] = carried
            else:
                out.append({"text": "", "thoughtSignature": carried})
            carried = None
        out.append(native)
    if carried is not None:
        out.append({"text": "", "thoughtSignature": carried})
    return out


def translate_contents(
    messages: list[Message], remembered: Mapping[str, str] | None = None
) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """(systemInstruction, contents) for ``messages`` (§7.3)."""
    names = dict(remembered or {})
    for message in messages:
        for part in message.content:
            if part.kind == ContentKind.TOOL_CALL and part.tool_call is not None:
                names[part.tool_call.id] = part.tool_call.name
    system: list[dict[str, Any]] = []
    contents: list[dict[str, Any]] = []
    for message in messages:
        if message.role in (Role.SYSTEM, Role.DEVELOPER):
            system.extend({"text": p.text} for p in message.content if p.kind == ContentKind.TEXT and p.text)
            continue
        role = "model" if message.role == Role.ASSISTANT else "user"
        parts = _parts(message, names, message.name)
        if parts:
            append_turn(contents, role, "parts", parts)
    return ({"parts": system} if system else None), contents


def _tool_config(request: Request) -> dict[str, Any]:
    if not request.tools:
        return {}
    declarations = [
        {"name": t.name, "description": t.description, "parametersJsonSchema": t.parameters}
        for t in request.tools
    ]
    body: dict[str, Any] = {"tools": [{"functionDeclarations": declarations}]}
    choice = request.tool_choice
    if choice is not None:
        mode = {"auto": "AUTO", "none": "NONE", "required": "ANY", "named": "ANY"}[choice.mode]
        config: dict[str, Any] = {"mode": mode}
        if choice.mode == "named":
            config["allowedFunctionNames"] = [choice.tool_name]
        body["toolConfig"] = {"functionCallingConfig": config}
    return body


def _generation_config(request: Request) -> dict[str, Any]:
    config: dict[str, Any] = {}
    put_present(config, temperature=request.temperature, topP=request.top_p, maxOutputTokens=request.max_tokens)
    if request.stop_sequences:
        config["stopSequences"] = list(request.stop_sequences)
    fmt = request.response_format
    if fmt is not None and fmt.type in ("json", "json_schema"):
        config["responseMimeType"] = "application/json"
        if fmt.json_schema is not None:
            config["responseJsonSchema"] = fmt.json_schema
    effort = request.reasoning_effort
    if effort:
        if "gemini-2" in request.model:
            config["thinkingConfig"] = {"thinkingBudget": thinking_budget(PROVIDER, THINKING_BUDGETS, effort)}
        else:
            config["thinkingConfig"] = {"thinkingLevel": effort}
    return config


def translate_request(request: Request, remembered: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The generateContent body for ``request``."""
    system, contents = translate_contents(request.messages, remembered)
    body: dict[str, Any] = {"contents": contents}
    if system:
        body["systemInstruction"] = system
    body.update(_tool_config(request))
    config = _generation_config(request)
    if config:
        body["generationConfig"] = config
    merge_options(body, options_for(request.provider_options, PROVIDER), extend=("tools",))
    return body


# ---------------------------------------------------------------- response


def synthetic_call_id() -> str:
    """A unique id for a call Gemini sent without one (§7.3)."""
    return "call_" + uuid.uuid4().hex


def _usage(raw: Any) -> Usage:
    meta: dict[str, Any] = raw if isinstance(raw, dict) else {}
    prompt = int(meta.get("promptTokenCount") or 0)
    candidates = int(meta.get("candidatesTokenCount") or 0)
    thoughts = meta.get("thoughtsTokenCount")
    cached = meta.get("cachedContentTokenCount")
    output = candidates + int(thoughts or 0)
    return Usage(
        prompt, output, int(meta.get("totalTokenCount") or prompt + output),
        reasoning_tokens=int(thoughts) if thoughts is not None else None,
        cache_read_tokens=int(cached) if cached is not None else None, raw=meta or None,
    )


def _unified_parts(part: dict[str, Any], warnings: list[Warning]) -> list[ContentPart]:
    signature = part.get("thoughtSignature")
    signature = str(signature) if signature else None
    if "functionCall" in part:
        call = part["functionCall"] if isinstance(part["functionCall"], dict) else {}
        args = call.get("args")
        call_id, name = str(call.get("id") or synthetic_call_id()), str(call.get("name") or "")
        data = ToolCallData(call_id, name, args if isinstance(args, dict) else {}, signature=signature)
        return [ContentPart.of_tool_call(data)]
    if "text" in part:
        text = str(part.get("text") or "")
        if part.get("thought"):
            return [ContentPart.of_thinking(text, signature)]
        carrier = [ContentPart.of_redacted_thinking("", signature)] if signature else []
        return carrier + ([ContentPart.of_text(text)] if text else [])
    if "inlineData" in part and isinstance(part["inlineData"], dict):
        inline = part["inlineData"]
        mime = str(inline.get("mimeType") or "")
        try:
            data_bytes = base64.b64decode(str(inline.get("data") or ""), validate=True)
        except (binascii.Error, ValueError):
            data_bytes = None
        if mime.startswith("image/") and data_bytes is not None:
            return [ContentPart.of_image(ImageData(data=data_bytes, media_type=mime))]
    if signature:
        return [ContentPart.of_redacted_thinking("", signature)]
    kinds = ", ".join(sorted(k for k in part if k != "thoughtSignature")) or "empty"
    warnings.append(Warning(f"gemini: ignored a response part of kind {kinds}", code="unknown_content"))
    return []


def parse_response(
    body: dict[str, Any], *, model: str, warnings: list[Warning] | None = None,
    rate_limit: RateLimitInfo | None = None,
) -> Response:
    """A GenerateContentResponse → :class:`Response` (§7.5); first candidate only."""
    warnings = list(warnings or [])
    try:
        candidates = body.get("candidates")
        candidate = candidates[0] if isinstance(candidates, list) and candidates else None
        if candidate is None:
            feedback = body.get("promptFeedback") or {}
            block = str(feedback.get("blockReason") or "NO_CANDIDATES")
            warnings.append(Warning(f"gemini: no candidate returned (promptFeedback.blockReason={block})",
                                    code="blocked"))
            parts: list[ContentPart] = []
            finish = FinishReason(FinishReason.CONTENT_FILTER if block != "NO_CANDIDATES" else FinishReason.OTHER, block)
        else:
            content = candidate.get("content") or {}
            native = content.get("parts") or []
            if not isinstance(native, list):
                raise TypeError("'parts' is not a list")
            parts = [p for n in native if isinstance(n, dict) for p in _unified_parts(n, warnings)]
            raw_finish = candidate.get("finishReason")
            reason = _FINISH.get(str(raw_finish), FinishReason.OTHER)
            if any(p.kind == ContentKind.TOOL_CALL for p in parts):
                reason = FinishReason.TOOL_CALLS
            finish = FinishReason(reason, None if raw_finish is None else str(raw_finish))
        return Response(
            str(body.get("responseId") or ""), str(body.get("modelVersion") or model), PROVIDER,
            Message(Role.ASSISTANT, parts), finish, _usage(body.get("usageMetadata")),
            raw=body, warnings=warnings, rate_limit=rate_limit,
        )
    except MALFORMED as exc:
        raise unexpected_shape(PROVIDER, "a response", exc, body) from exc


# ---------------------------------------------------------------- stream


_EDGES = {
    "text": (StreamEventType.TEXT_START, StreamEventType.TEXT_END),
    "reasoning": (StreamEventType.REASONING_START, StreamEventType.REASONING_END),
}
"""The (start, end) events of a text or reasoning segment."""


class _StreamState:
    """Turns streamed GenerateContentResponse chunks into events and the final response.

    Gemini has no terminal event: a stream is complete when a chunk carried a
    ``finishReason`` (or the prompt was blocked); otherwise its end is a StreamError.
    """

    finished = False
    """Read to the end of the stream: a chunk after the one with ``finishReason`` may still
    carry usage."""

    def __init__(
        self, model: str, rate_limit: RateLimitInfo | None = None,
        on_finish: Callable[[Response], None] | None = None,
    ) -> None:
        self.model = model
        self.rate_limit = rate_limit
        self.on_finish = on_finish
        self.parts: list[dict[str, Any]] = []
        self.last: dict[str, Any] = {}
        self.usage: Any = None
        self.finish: str | None = None
        self.blocked = False
        self.open: str | None = None  # "text" or "reasoning" segment in progress
        self.segment = 0
        self.started = False

    def _edge(self, kind: str, end: bool) -> StreamEvent:
        return StreamEvent(_EDGES[kind][end], text_id=str(self.segment) if kind == "text" else None)

    def _close(self) -> list[StreamEvent]:
        events = [] if self.open is None else [self._edge(self.open, True)]
        self.open = None
        return events

    def _open(self, kind: str) -> list[StreamEvent]:
        if self.open == kind:
            return []
        events = self._close()
        self.open = kind
        self.segment += kind == "text"
        return [*events, self._edge(kind, False)]

    def _append_text(self, part: dict[str, Any]) -> None:
        previous = self.parts[-1] if self.parts else {}
        same_kind = "text" in previous and bool(previous.get("thought")) == bool(part.get("thought"))
        if same_kind and not previous.get("thoughtSignature") and part.get("text"):
            previous["text"] = str(previous.get("text") or "") + str(part.get("text") or "")
            if part.get("thoughtSignature"):
                previous["thoughtSignature"] = part["thoughtSignature"]
        else:
            self.parts.append(dict(part))

    def feed(self, sse: SSEEvent) -> list[StreamEvent]:
        return self.on_chunk(decode_json_event(PROVIDER, sse.data))

    def end(self) -> list[StreamEvent]:
        require_final_event(PROVIDER, self.complete, "a chunk with finishReason")
        finish = self.finish_event([])
        if self.on_finish is not None and finish.response is not None:
            self.on_finish(finish.response)
        return [finish]

    def on_chunk(self, chunk: dict[str, Any]) -> list[StreamEvent]:
        if "error" in chunk:
            raise error_in_answer(
                PROVIDER, chunk, chunk["error"], missing="error chunk without a message",
                code_keys=("status",), grpc=True,
            )
        events: list[StreamEvent] = []
        if not self.started:
            self.started = True
            events.append(StreamEvent(StreamEventType.STREAM_START, raw=chunk))
        self.last = chunk
        if chunk.get("usageMetadata") is not None:
            self.usage = chunk["usageMetadata"]
        candidates = chunk.get("candidates")
        if not candidates:
            if (chunk.get("promptFeedback") or {}).get("blockReason"):
                self.blocked = True
            return events
        candidate = candidates[0]
        for part in (candidate.get("content") or {}).get("parts") or []:
            if not isinstance(part, dict):
                continue
            if "functionCall" in part:
                events.extend(self._close())
                call = dict(part["functionCall"] or {})
                call.setdefault("id", synthetic_call_id())
                native = {**part, "functionCall": call}
                self.parts.append(native)
                [unified] = _unified_parts(native, [])
                assert unified.tool_call is not None
                complete = tool_call_from_data(unified.tool_call)
                start = ToolCall(complete.id, complete.name, {}, "", signature=complete.signature)
                events.append(StreamEvent(StreamEventType.TOOL_CALL_START, tool_call=start))
                events.append(StreamEvent(StreamEventType.TOOL_CALL_END, tool_call=complete))
            elif "text" in part:
                text = str(part.get("text") or "")
                self._append_text(part)
                if part.get("thought"):
                    events.extend(self._open("reasoning"))
                    events.append(StreamEvent(StreamEventType.REASONING_DELTA, reasoning_delta=text))
                elif text:
                    events.extend(self._open("text"))
                    events.append(StreamEvent(StreamEventType.TEXT_DELTA, delta=text, text_id=str(self.segment)))
            else:
                self.parts.append(dict(part))
                events.append(StreamEvent(StreamEventType.PROVIDER_EVENT, raw=part))
        if candidate.get("finishReason"):
            self.finish = str(candidate["finishReason"])
            events.extend(self._close())
        return events

    @property
    def complete(self) -> bool:
        return self.finish is not None or self.blocked

    def finish_event(self, warnings: list[Warning]) -> StreamEvent:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": self.parts}, "index": 0}
        if self.finish is not None:
            candidate["finishReason"] = self.finish
        body = {**self.last, "candidates": [] if self.blocked and not self.parts else [candidate]}
        if self.usage is not None:
            body["usageMetadata"] = self.usage
        response = parse_response(body, model=self.model, warnings=warnings, rate_limit=self.rate_limit)
        return StreamEvent.finish(response)


# ---------------------------------------------------------------- adapter


def _api_base(base_url: str) -> str:
    base = base_url.rstrip("/")
    return base if _VERSIONED.search(base) else base + "/v1beta"


class GeminiAdapter(HTTPAdapter):
    """The Gemini API (§7.3). Safe for concurrent use; ``close()`` when done.

    ``api_key`` falls back to ``GEMINI_API_KEY`` then ``GOOGLE_API_KEY``; ``base_url`` to
    ``GEMINI_BASE_URL``, then the public endpoint (``/v1beta`` is appended to a base URL
    without a version segment). A missing key raises ConfigurationError here.
    """

    def __init__(
        self, api_key: str | None = None, *, base_url: str | None = None,
        timeout: float | AdapterTimeout | None = None, default_headers: Mapping[str, str] | None = None,
        key_in_query: bool = False, transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        key = require_api_key(PROVIDER, api_key, "GEMINI_API_KEY", "GOOGLE_API_KEY")
        self._base = _api_base(base_url or os.environ.get("GEMINI_BASE_URL") or DEFAULT_BASE_URL)
        self._params = {"key": key} if key_in_query else {}
        headers = {} if key_in_query else {"x-goog-api-key": key}
        headers.update(default_headers or {})
        super().__init__(PROVIDER, headers=headers, timeout=timeout, transport=transport)
        self._issued: OrderedDict[str, str] = OrderedDict()

    def _remember(self, response: Response) -> None:
        for call in response.tool_calls:
            self._issued[call.id] = call.name
            self._issued.move_to_end(call.id)
        while len(self._issued) > _MAX_REMEMBERED_IDS:
            self._issued.popitem(last=False)

    def build_call(self, request: Request, *, stream: bool) -> WireCall:
        path = request.model if "/" in request.model else f"models/{request.model}"
        method = "streamGenerateContent" if stream else "generateContent"
        params = {**self._params, "alt": "sse"} if stream else self._params
        return WireCall(f"{self._base}/{path}:{method}", translate_request(request, self._issued), params=params)

    def parse_response(
        self, body: dict[str, Any], request: Request, rate_limit: RateLimitInfo | None, warnings: list[Warning]
    ) -> Response:
        response = parse_response(body, model=request.model, warnings=warnings, rate_limit=rate_limit)
        self._remember(response)
        return response

    def new_stream_state(
        self, request: Request, rate_limit: RateLimitInfo | None, warnings: list[Warning]
    ) -> _StreamState:
        return _StreamState(request.model, rate_limit, self._remember)

    map_error = staticmethod(map_gemini_error)
