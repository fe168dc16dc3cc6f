"""Adapter for OpenAI-compatible Chat Completions servers (unified-llm spec §7.10).

For third-party servers that speak ``POST {base_url}/chat/completions`` (llama.cpp's
``llama-server``, vLLM, Ollama, gateways). OpenAI itself goes through the Responses API
adapter (§2.7); this one has no reasoning-token breakdown or built-in tools.

Wire shapes (request body, ``chat.completion`` object, ``chat.completion.chunk`` stream
ending in ``data: [DONE]``, ``{"error": {...}}`` bodies) follow the OpenAI API reference
for Chat Completions ("Create chat completion", "The chat completion chunk object") and
llama.cpp's ``tools/server/README.md`` (OAI-compatible endpoints, ``reasoning_content``,
errors as ``{"error": {"code", "message", "type"}}``, usage in the last chunk).

Translation notes:
- SYSTEM and DEVELOPER messages are sent as ``system`` (many chat templates reject
  ``developer``). THINKING parts are not sent back (the wire has no slot for them).
- A failed tool result is sent with ``Error: `` before its content; the wire has no flag.
- Tool calls without an id in the stream get a synthetic ``call_<hex>`` id.
- Presets (:func:`llama_cpp`, :func:`vllm`, :func:`ollama`) only fill base URL, key and
  name; they are not separate adapters (STYLE §6).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any

import httpx

from codeloop.llm.accumulator import StreamAccumulator
from codeloop.llm.adapters.base import AdapterTimeout
from codeloop.llm.adapters.content_encoding import data_uri, inline_media, put_present
from codeloop.llm.adapters.flow import HTTPAdapter, WireCall, decode_json_event, usage_from
from codeloop.llm.errors import InvalidRequestError, ProviderError, error_in_answer
from codeloop.llm.sse import SSEEvent, require_final_event
from codeloop.llm.types import (
    ContentKind,
    ContentPart,
    FinishReason,
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

_FINISH = {
    "stop": FinishReason.STOP,
    "length": FinishReason.LENGTH,
    "tool_calls": FinishReason.TOOL_CALLS,
    "function_call": FinishReason.TOOL_CALLS,
    "content_filter": FinishReason.CONTENT_FILTER,
}


_USAGE = ("prompt_tokens", "completion_tokens")


def finish_reason(raw: str | None, has_tool_calls: bool) -> FinishReason:
    """Unified finish reason; tool calls win over a plain ``stop`` (Ollama sends ``stop``)."""
    if has_tool_calls and raw in (None, "stop"):
        return FinishReason(FinishReason.TOOL_CALLS, raw)
    if raw is None:
        return FinishReason(FinishReason.OTHER, None)
    return FinishReason(_FINISH.get(raw, FinishReason.OTHER), raw)


class OpenAICompatibleAdapter(HTTPAdapter):
    """Chat Completions over ``httpx`` for llama.cpp, vLLM, Ollama and similar servers."""

    announces_start = True  # a chunk stream has no start event of its own

    def __init__(
        self, base_url: str = "http://127.0.0.1:8080/v1", api_key: str | None = None, *,
        name: str = "openai_compatible", default_headers: Mapping[str, str] | None = None,
        timeout: float | AdapterTimeout | None = None, stream_usage: bool = True,
        transport: httpx.AsyncBaseTransport | None = None, extra_body: Mapping[str, Any] | None = None,
    ) -> None:
        """``base_url`` ends at the API root (``.../v1``); ``stream_usage`` asks for usage
        in streams with ``stream_options.include_usage`` (turn off for servers that reject it);
        ``extra_body`` fields go into every request body (a server's own options, e.g.
        llama.cpp's ``cache_prompt``); a request's ``provider_options`` override them."""
        self.extra_body = dict(extra_body or {})
        self.base_url = base_url.rstrip("/")
        if timeout is None and _is_loopback(self.base_url):
            # A model on this machine's CPU can take minutes to read a long prompt before
            # the first token; a remote API's 30 s silence limit would cut it off.
            timeout = LOCAL_SERVER_TIMEOUT
        self.stream_usage = stream_usage
        headers = {"content-type": "application/json", **dict(default_headers or {})}
        if api_key:
            headers["authorization"] = f"Bearer {api_key}"
        super().__init__(name, headers=headers, timeout=timeout, transport=transport, base_url=self.base_url)

    # -- request translation -------------------------------------------------------

    def _unsupported(self, what: str) -> InvalidRequestError:
        return InvalidRequestError(
            f"{self._name}: {what} cannot be sent over Chat Completions", provider=self._name, retryable=False
        )

    def _user_part(self, part: ContentPart) -> dict[str, Any]:
        if part.kind == ContentKind.TEXT:
            return {"type": "text", "text": part.text or ""}
        if part.kind == ContentKind.IMAGE and part.image is not None:
            image_url: dict[str, Any] = {"url": data_uri(part.image, "image/png")}
            if part.image.detail:
                image_url["detail"] = part.image.detail
            return {"type": "image_url", "image_url": image_url}
        if part.kind == ContentKind.AUDIO and part.audio is not None:
            inline = inline_media(part.audio, "audio/wav")
            if inline is not None:
                return {"type": "input_audio", "input_audio": {"data": inline[1], "format": inline[0].split("/")[-1]}}
        raise self._unsupported(f"content kind {str(part.kind)!r} in a user message")

    def _message(self, msg: Message) -> list[dict[str, Any]]:
        if msg.role in (Role.SYSTEM, Role.DEVELOPER):
            return [{"role": "system", "content": msg.text}]
        if msg.role == Role.USER:
            if all(p.kind == ContentKind.TEXT for p in msg.content):
                return [{"role": "user", "content": msg.text}]
            return [{"role": "user", "content": [self._user_part(p) for p in msg.content]}]
        if msg.role == Role.ASSISTANT:
            out: dict[str, Any] = {"role": "assistant", "content": msg.text or None}
            calls = [self._tool_call(p.tool_call) for p in msg.content if p.tool_call is not None]
            if calls:
                out["tool_calls"] = calls
            return [out]
        if msg.role == Role.TOOL:
            results = [p.tool_result for p in msg.content if p.tool_result is not None]
            if not results:
                raise self._unsupported("a tool message without a tool_result part")
            return [
                {
                    "role": "tool",
                    "tool_call_id": r.tool_call_id,
                    "content": ("Error: " if r.is_error else "")
                    + (r.content if isinstance(r.content, str) else json.dumps(r.content)),
                }
                for r in results
            ]
        raise self._unsupported(f"role {msg.role!r}")

    @staticmethod
    def _tool_call(call: ToolCallData) -> dict[str, Any]:
        args = call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)
        return {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": args}}

    def build_body(self, request: Request, *, stream: bool) -> dict[str, Any]:
        """The JSON body for ``request`` (exposed for tests and debugging)."""
        body: dict[str, Any] = {
            "model": request.model,
            "messages": [m for msg in request.messages for m in self._message(msg)],
        }
        if request.tools:
            body["tools"] = [
                {"type": "function", "function": {"name": t.name, "description": t.description,
                                                  "parameters": t.parameters}}
                for t in request.tools
            ]
        if request.tool_choice is not None:
            tc = request.tool_choice
            body["tool_choice"] = (
                {"type": "function", "function": {"name": tc.tool_name}} if tc.mode == "named" else tc.mode
            )
        if request.response_format is not None and request.response_format.type != "text":
            fmt = request.response_format
            body["response_format"] = (
                {"type": "json_object"} if fmt.type == "json" else {
                    "type": "json_schema",
                    "json_schema": {"name": "response", "schema": fmt.json_schema, "strict": fmt.strict},
                }
            )
        put_present(
            body, temperature=request.temperature, top_p=request.top_p, max_tokens=request.max_tokens,
            stop=request.stop_sequences, reasoning_effort=request.reasoning_effort,
        )
        if stream:
            body["stream"] = True
            if self.stream_usage:
                body["stream_options"] = {"include_usage": True}
        body.update(self.extra_body)
        options = (request.provider_options or {}).get(self._name)
        if isinstance(options, dict):
            body.update(options)
        return body

    # -- response translation ------------------------------------------------------

    def _bad_shape(self, what: str, body: Any) -> ProviderError:
        return ProviderError(
            f"{self._name} returned a response without {what}: {json.dumps(body)[:300]}",
            provider=self._name, retryable=True, raw=body if isinstance(body, dict) else None,
        )

    def build_call(self, request: Request, *, stream: bool) -> WireCall:
        return WireCall("/chat/completions", self.build_body(request, stream=stream))

    def parse_response(
        self, body: dict[str, Any], request: Request, rate_limit: RateLimitInfo | None, warnings: list[Warning]
    ) -> Response:
        """The unified Response for a ``chat.completion`` object."""
        if isinstance(body.get("error"), dict):
            raise error_in_answer(self._name, body, body["error"], missing="unknown error")
        choices = body.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise self._bad_shape("choices", body)
        message = choices[0].get("message")
        if not isinstance(message, dict):
            raise self._bad_shape("choices[0].message", body)
        parts: list[ContentPart] = []
        reasoning = message.get("reasoning_content")
        if isinstance(reasoning, str) and reasoning:
            parts.append(ContentPart.of_thinking(reasoning))
        content = message.get("content")
        if isinstance(content, str) and content:
            parts.append(ContentPart.of_text(content))
        for call in message.get("tool_calls") or []:
            fn = call.get("function") if isinstance(call, dict) else None
            if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
                raise self._bad_shape("a function name in a tool call", body)
            raw = fn.get("arguments")
            raw_text = raw if isinstance(raw, str) else json.dumps(raw or {})
            arguments = tool_arguments_or_raw(raw_text)  # Response.tool_calls reports bad JSON as parse_error
            call_id = call.get("id") or f"call_{uuid.uuid4().hex[:24]}"
            parts.append(ContentPart.of_tool_call(ToolCallData(str(call_id), fn["name"], arguments)))
        has_calls = any(p.kind == ContentKind.TOOL_CALL for p in parts)
        return Response(
            str(body.get("id", "")), str(body.get("model", "")), self._name, Message(Role.ASSISTANT, parts),
            finish_reason(choices[0].get("finish_reason"), has_calls), usage_from(body.get("usage"), *_USAGE),
            raw=body, warnings=warnings, rate_limit=rate_limit,
        )

    def new_stream_state(
        self, request: Request, rate_limit: RateLimitInfo | None, warnings: list[Warning]
    ) -> _ChunkState:
        state = _ChunkState(self._name, request.model)
        state.acc.rate_limit = rate_limit
        return state


class _ChunkState:
    """Folds ``chat.completion.chunk`` objects into unified events."""

    def __init__(self, provider: str, model: str) -> None:
        self.provider = provider
        self.acc = StreamAccumulator(provider=provider, model=model)
        self.finished = False
        self.text_open = False
        self.reasoning_open = False
        self.calls: dict[int, ToolCall] = {}
        self.args: dict[int, list[str]] = {}
        self.raw_finish: str | None = None
        self.usage: Usage | None = None

    def _emit(self, event: StreamEvent) -> StreamEvent:
        self.acc.process(event)
        return event

    def feed(self, sse: SSEEvent) -> list[StreamEvent]:
        if sse.data.strip() == "[DONE]":
            self.finished = True
            return []
        chunk = decode_json_event(self.provider, sse.data)
        if isinstance(chunk.get("error"), dict):
            raise error_in_answer(self.provider, chunk, chunk["error"], missing="unknown error")
        out: list[StreamEvent] = []
        self.acc.response_id = self.acc.response_id or str(chunk.get("id", ""))
        if isinstance(chunk.get("model"), str):
            self.acc.model = chunk["model"]
        if isinstance(chunk.get("usage"), dict):
            self.usage = usage_from(chunk["usage"], *_USAGE)
        choices = chunk.get("choices")
        first = choices[0] if isinstance(choices, list) and choices else None
        choice: dict[str, Any] = first if isinstance(first, dict) else {}
        raw_delta = choice.get("delta")
        delta: dict[str, Any] = raw_delta if isinstance(raw_delta, dict) else {}
        reasoning = delta.get("reasoning_content")
        if isinstance(reasoning, str) and reasoning:
            if not self.reasoning_open:
                self.reasoning_open = True
                out.append(self._emit(StreamEvent(StreamEventType.REASONING_START)))
            out.append(self._emit(StreamEvent(StreamEventType.REASONING_DELTA, reasoning_delta=reasoning)))
        content = delta.get("content")
        if isinstance(content, str) and content:
            if self.reasoning_open:
                self.reasoning_open = False
                out.append(self._emit(StreamEvent(StreamEventType.REASONING_END)))
            if not self.text_open:
                self.text_open = True
                out.append(self._emit(StreamEvent(StreamEventType.TEXT_START, text_id="text_0")))
            out.append(self._emit(StreamEvent(StreamEventType.TEXT_DELTA, delta=content, text_id="text_0")))
        for item in delta.get("tool_calls") or []:
            if isinstance(item, dict):
                out.extend(self._tool_delta(item))
        if isinstance(choice.get("finish_reason"), str):
            self.raw_finish = choice["finish_reason"]
        return out

    def _tool_delta(self, item: dict[str, Any]) -> list[StreamEvent]:
        index = item.get("index", len(self.calls))
        index = index if isinstance(index, int) else len(self.calls)
        raw_fn = item.get("function")
        fn: dict[str, Any] = raw_fn if isinstance(raw_fn, dict) else {}
        out: list[StreamEvent] = []
        if index not in self.calls:
            call_id = item.get("id") or f"call_{uuid.uuid4().hex[:24]}"
            self.calls[index] = ToolCall(str(call_id), str(fn.get("name") or ""), {}, "")
            self.args[index] = []
            out.append(self._emit(StreamEvent(StreamEventType.TOOL_CALL_START, tool_call=self.calls[index])))
        fragment = fn.get("arguments")
        if isinstance(fragment, str) and fragment:
            self.args[index].append(fragment)
            delta = StreamEvent(StreamEventType.TOOL_CALL_DELTA, delta=fragment, tool_call=self.calls[index])
            out.append(self._emit(delta))
        return out

    def end(self) -> list[StreamEvent]:
        require_final_event(self.provider, self.finished, "data: [DONE]")
        out: list[StreamEvent] = []
        if self.reasoning_open:
            out.append(self._emit(StreamEvent(StreamEventType.REASONING_END)))
        if self.text_open:
            out.append(self._emit(StreamEvent(StreamEventType.TEXT_END, text_id="text_0")))
        for index, start in self.calls.items():
            call = tool_call_from_data(ToolCallData(start.id, start.name, "".join(self.args[index])))
            out.append(self._emit(StreamEvent(StreamEventType.TOOL_CALL_END, tool_call=call)))
        self.acc.finish_reason = finish_reason(self.raw_finish, bool(self.calls))
        self.acc.usage = self.usage or Usage()
        return [*out, StreamEvent.finish(self.acc.response())]


LOCAL_SERVER_TIMEOUT = AdapterTimeout(connect=10.0, request=1800.0, stream_read=900.0)
"""Timeouts for servers on loopback (llama.cpp, Ollama on a CPU): patient, still bounded."""


def _is_loopback(base_url: str) -> bool:
    host = (httpx.URL(base_url).host or "").strip("[]")
    return host in ("localhost", "::1") or host.startswith("127.")


def llama_cpp(base_url: str = "http://127.0.0.1:8080/v1", **options: Any) -> OpenAICompatibleAdapter:
    """Preset for llama.cpp's ``llama-server`` (no key; usage arrives in the last chunk)."""
    return OpenAICompatibleAdapter(base_url, name=options.pop("name", "llama_cpp"), **options)


def vllm(base_url: str = "http://127.0.0.1:8000/v1", api_key: str | None = None, **options: Any) -> OpenAICompatibleAdapter:
    """Preset for vLLM's OpenAI-compatible server (``--api-key`` optional)."""
    return OpenAICompatibleAdapter(base_url, api_key, name=options.pop("name", "vllm"), **options)


def ollama(base_url: str = "http://127.0.0.1:11434/v1", **options: Any) -> OpenAICompatibleAdapter:
    """Preset for Ollama's OpenAI-compatible endpoint (it ignores the key)."""
    return OpenAICompatibleAdapter(base_url, name=options.pop("name", "ollama"), **options)
