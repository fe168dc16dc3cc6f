"""Anthropic Messages API wire shapes for the loopback server.

Shapes follow Anthropic's API reference:
- response body: https://docs.claude.com/en/api/messages ("Response": id, type "message",
  role, model, content blocks, stop_reason, stop_sequence, usage with
  cache_creation_input_tokens / cache_read_input_tokens);
- content blocks text / tool_use / thinking (with signature) / redacted_thinking (opaque
  ``data``): https://docs.claude.com/en/docs/build-with-claude/extended-thinking;
- streaming: https://docs.claude.com/en/docs/build-with-claude/streaming (message_start,
  content_block_start, ping, content_block_delta with text_delta / input_json_delta /
  thinking_delta / signature_delta, content_block_stop, message_delta with stop_reason and
  cumulative output usage, message_stop, and the in-stream ``error`` event);
- errors: https://docs.claude.com/en/api/errors ({"type": "error", "error": {"type", "message"},
  "request_id"}; 400 invalid_request_error, 401 authentication_error, 403 permission_error,
  404 not_found_error, 413 request_too_large, 429 rate_limit_error, 500 api_error,
  529 overloaded_error);
- rate-limit headers: https://docs.claude.com/en/api/rate-limits
  (anthropic-ratelimit-requests-limit / -remaining / -reset, anthropic-ratelimit-tokens-*).
"""

from __future__ import annotations

import json
from typing import Any

from .wire_loopback import Reply, json_reply, sse_frame, sse_reply

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    408: "timeout_error",
    413: "request_too_large",
    422: "invalid_request_error",
    429: "rate_limit_error",
    500: "api_error",
    503: "api_error",
    529: "overloaded_error",
}

RATE_LIMIT_HEADERS = {
    "anthropic-ratelimit-requests-limit": "50",
    "anthropic-ratelimit-requests-remaining": "49",
    "anthropic-ratelimit-requests-reset": "2026-11-22T04:00:00Z",
    "anthropic-ratelimit-tokens-limit": "80000",
    "anthropic-ratelimit-tokens-remaining": "79000",
    "anthropic-ratelimit-tokens-reset": "2026-11-22T04:00:30Z",
    "request-id": "req_018EeWyXxfu5pfWkrYcMdjWG",
}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_use(id: str, name: str, input: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": id, "name": name, "input": input}


def thinking(value: str, signature: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": value, "signature": signature}


def redacted_thinking(data: str) -> dict[str, Any]:
    return {"type": "redacted_thinking", "data": data}


def usage(
    input_tokens: int = 25, output_tokens: int = 12, cache_write: int = 0, cache_read: int = 0
) -> dict[str, Any]:
    return {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cache_creation_input_tokens": cache_write,
        "cache_read_input_tokens": cache_read,
    }


def message(
    content: list[dict[str, Any]],
    stop_reason: str = "end_turn",
    model: str = "claude-sonnet-4-5-20250929",
    id: str = "msg_013Zva2CMHLNnXjNJJKqJ2EF",
    usage_: dict[str, Any] | None = None,
    stop_sequence: str | None = None,
) -> dict[str, Any]:
    """A complete non-streaming Messages response body."""
    return {
        "id": id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": stop_sequence,
        "usage": usage_ or usage(),
    }


def message_reply(body: dict[str, Any], headers: dict[str, str] | None = None) -> Reply:
    return json_reply(body, headers={**RATE_LIMIT_HEADERS, **(headers or {})})


def error_body(status: int, message: str, error_type: str | None = None) -> dict[str, Any]:
    return {
        "type": "error",
        "error": {"type": error_type or ERROR_TYPES.get(status, "api_error"), "message": message},
        "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy",
    }


def error_reply(status: int, message: str, headers: dict[str, str] | None = None) -> Reply:
    return json_reply(error_body(status, message), status=status, headers=headers)


def _pieces(value: str, size: int = 4) -> list[str]:
    return [value[i : i + size] for i in range(0, len(value), size)] or [""]


def stream_frames(body: dict[str, Any], final: bool = True) -> list[bytes]:
    """The SSE events the real API sends for ``body`` (a complete message).

    Text, tool input JSON and thinking arrive in small deltas; the thinking signature arrives
    in one ``signature_delta`` just before ``content_block_stop``, as documented.
    With ``final=False`` the stream stops before ``message_delta``/``message_stop``.
    """
    start_usage = dict(body["usage"])
    start_usage["output_tokens"] = 1
    frames = [
        sse_frame(
            {"type": "message_start", "message": {**body, "content": [], "stop_reason": None, "usage": start_usage}},
            "message_start",
        ),
        sse_frame({"type": "ping"}, "ping"),
    ]
    for index, block in enumerate(body["content"]):
        kind = block["type"]
        if kind == "text":
            empty: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": p} for p in _pieces(block["text"])]
        elif kind == "tool_use":
            empty = {**block, "input": {}}
            deltas = [
                {"type": "input_json_delta", "partial_json": p} for p in ["", *_pieces(json.dumps(block["input"]), 7)]
            ]
        elif kind == "thinking":
            empty = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": p} for p in _pieces(block["thinking"])]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        else:
            empty, deltas = block, []
        frames.append(
            sse_frame({"type": "content_block_start", "index": index, "content_block": empty}, "content_block_start")
        )
        for delta in deltas:
            frames.append(
                sse_frame({"type": "content_block_delta", "index": index, "delta": delta}, "content_block_delta")
            )
        frames.append(sse_frame({"type": "content_block_stop", "index": index}, "content_block_stop"))
    if final:
        frames.append(
            sse_frame(
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": body["stop_reason"], "stop_sequence": body["stop_sequence"]},
                    "usage": {"output_tokens": body["usage"]["output_tokens"]},
                },
                "message_delta",
            )
        )
        frames.append(sse_frame({"type": "message_stop"}, "message_stop"))
    return frames


def stream_reply(body: dict[str, Any], cut_after: int | None = None, final: bool = True) -> Reply:
    return sse_reply(stream_frames(body, final=final), cut_after=cut_after, headers=RATE_LIMIT_HEADERS)


def stream_error_frame(status: int, message: str) -> bytes:
    """An ``error`` event sent inside a 200 stream (e.g. overloaded mid-stream)."""
    return sse_frame(error_body(status, message), "error")
