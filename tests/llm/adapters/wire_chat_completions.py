"""Chat Completions wire shapes (OpenAI-compatible servers) for the loopback server.

Shapes follow:
- OpenAI API reference, "Create chat completion" and "The chat completion object"
  (https://platform.openai.com/docs/api-reference/chat/object): ``id`` "chatcmpl-…",
  ``object`` "chat.completion", ``choices[].message`` with ``content`` and ``tool_calls``
  (``id``, ``type`` "function", ``function.name``, ``function.arguments`` as a JSON string),
  ``finish_reason``, ``usage`` with ``prompt_tokens``/``completion_tokens``/``total_tokens``
  and ``prompt_tokens_details.cached_tokens``/``completion_tokens_details.reasoning_tokens``;
- "The chat completion chunk object" (https://platform.openai.com/docs/api-reference/chat-streaming):
  ``chat.completion.chunk`` objects whose ``choices[].delta`` carries ``role``, ``content``
  or ``tool_calls`` fragments keyed by ``index`` (id and name in the first fragment only),
  a final chunk with ``finish_reason``, a usage-only chunk with ``choices: []`` when
  ``stream_options.include_usage`` is set, then ``data: [DONE]``;
- llama.cpp ``tools/server/README.md``: ``reasoning_content`` in messages/deltas, ``timings``,
  and errors as ``{"error": {"code": 400, "message": ..., "type": "invalid_request_error"}}``
  (also sent as a ``data:`` event when a stream fails after it started);
- OpenAI error codes guide (https://platform.openai.com/docs/guides/error-codes):
  ``{"error": {"message", "type", "param", "code"}}``.
"""

from __future__ import annotations

from typing import Any

from .wire_loopback import Reply, json_reply, sse_frame, sse_reply

CREATED = 1732000000


def completion(
    content: str | None = "Hello!",
    *,
    tool_calls: list[dict[str, Any]] | None = None,
    finish_reason: str = "stop",
    reasoning_content: str | None = None,
    model: str = "qwen2.5-coder-0.5b-instruct",
    usage: dict[str, Any] | None = None,
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    if reasoning_content is not None:
        message["reasoning_content"] = reasoning_content
    return {
        "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
        "object": "chat.completion",
        "created": CREATED,
        "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason}],
        "usage": usage
        or {
            "prompt_tokens": 19,
            "completion_tokens": 10,
            "total_tokens": 29,
            "prompt_tokens_details": {"cached_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0},
        },
        "system_fingerprint": "b11434-0a1b2c3d",
    }


def tool_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def chunk(delta: dict[str, Any], finish_reason: str | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-123",
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": "qwen2.5-coder-0.5b-instruct",
        "system_fingerprint": "b11434-0a1b2c3d",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
        **extra,
    }


def usage_chunk(prompt: int = 12, completion: int = 5) -> dict[str, Any]:
    return {
        "id": "chatcmpl-123",
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": "qwen2.5-coder-0.5b-instruct",
        "choices": [],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
    }


def text_stream_frames(pieces: list[str]) -> list[bytes]:
    frames = [sse_frame(chunk({"role": "assistant", "content": None}))]
    frames += [sse_frame(chunk({"content": p})) for p in pieces]
    frames += [sse_frame(chunk({}, "stop")), sse_frame(usage_chunk()), sse_frame("[DONE]")]
    return frames


def tool_stream_frames() -> list[bytes]:
    """Two parallel calls, arguments split across fragments as OpenAI streams them."""
    first = {"index": 0, "id": "call_abc", "type": "function", "function": {"name": "read_file", "arguments": ""}}
    second = {"index": 1, "id": "call_def", "type": "function", "function": {"name": "list_dir", "arguments": ""}}
    return [
        sse_frame(chunk({"role": "assistant", "content": None, "tool_calls": [first]})),
        sse_frame(chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"pa'}}]})),
        sse_frame(chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'th": "a.py"}'}}]})),
        sse_frame(chunk({"tool_calls": [second]})),
        sse_frame(chunk({"tool_calls": [{"index": 1, "function": {"arguments": '{"path": "."}'}}]})),
        sse_frame(chunk({}, "tool_calls")),
        sse_frame(usage_chunk(30, 20)),
        sse_frame("[DONE]"),
    ]


ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    408: "timeout",
    413: "invalid_request_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
    500: "server_error",
    503: "unavailable_error",
}


def error_reply(status: int, message: str, headers: dict[str, str] | None = None) -> Reply:
    return json_reply(
        {"error": {"code": status, "message": message, "type": ERROR_TYPES.get(status, "error"), "param": None}},
        status=status,
        headers=headers,
    )


__all__ = [
    "chunk",
    "completion",
    "error_reply",
    "sse_frame",
    "sse_reply",
    "text_stream_frames",
    "tool_call",
    "tool_stream_frames",
    "usage_chunk",
]
