"""OpenAI Responses API wire shapes for the loopback server.

Shapes follow OpenAI's API reference:
- response object: https://platform.openai.com/docs/api-reference/responses/object (id "resp_…",
  object "response", status completed / incomplete / failed, ``output`` items of type
  ``message`` (content ``output_text`` with annotations), ``function_call`` (id, call_id, name,
  arguments as a JSON string), ``reasoning`` (summary parts, ``encrypted_content`` when
  ``include: ["reasoning.encrypted_content"]``), ``incomplete_details.reason``, and
  ``usage`` with ``input_tokens_details.cached_tokens`` and
  ``output_tokens_details.reasoning_tokens``);
- streaming: https://platform.openai.com/docs/api-reference/responses-streaming
  (response.created, response.in_progress, response.output_item.added,
  response.content_part.added, response.output_text.delta / .done,
  response.function_call_arguments.delta / .done, response.reasoning_summary_text.delta,
  response.output_item.done, response.completed / response.incomplete / response.failed,
  and ``error``), every event with a ``sequence_number``, no ``[DONE]`` sentinel;
- errors: https://platform.openai.com/docs/guides/error-codes ({"error": {"message", "type",
  "param", "code"}});
- rate-limit headers: https://platform.openai.com/docs/guides/rate-limits
  (x-ratelimit-limit-requests, x-ratelimit-remaining-requests, x-ratelimit-reset-requests, and
  the ``-tokens`` variants).
"""

from __future__ import annotations

from typing import Any

from .wire_loopback import Reply, json_reply, sse_frame, sse_reply

RATE_LIMIT_HEADERS = {
    "x-ratelimit-limit-requests": "500",
    "x-ratelimit-remaining-requests": "499",
    "x-ratelimit-reset-requests": "120ms",
    "x-ratelimit-limit-tokens": "30000",
    "x-ratelimit-remaining-tokens": "29000",
    "x-ratelimit-reset-tokens": "2s",
    "x-request-id": "req_8d3c2f5a0b",
}

ERROR_TYPES = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "unsupported_country_region_territory"),
    404: ("invalid_request_error", "model_not_found"),
    408: ("timeout", None),
    413: ("invalid_request_error", "request_too_large"),
    422: ("invalid_request_error", None),
    429: ("requests", "rate_limit_exceeded"),
    500: ("server_error", None),
    503: ("server_error", None),
}


def output_message(text: str, id: str = "msg_67ccd3acc8d48190a77525dc06de64b4") -> dict[str, Any]:
    return {
        "type": "message",
        "id": id,
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def function_call(call_id: str, name: str, arguments: str, id: str | None = None) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": id or "fc_" + call_id.removeprefix("call_"),
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": "completed",
    }


def reasoning(
    summary: str, encrypted_content: str | None = None, id: str = "rs_6820f383d7c08191846711c5df8233bc"
) -> dict[str, Any]:
    item: dict[str, Any] = {
        "type": "reasoning",
        "id": id,
        "summary": [{"type": "summary_text", "text": summary}] if summary else [],
    }
    if encrypted_content is not None:
        item["encrypted_content"] = encrypted_content
    return item


def usage(input_tokens: int = 36, output_tokens: int = 87, cached: int = 0, reasoning_tokens: int = 0) -> dict[str, Any]:
    return {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": reasoning_tokens},
        "total_tokens": input_tokens + output_tokens,
    }


def response(
    output: list[dict[str, Any]],
    status: str = "completed",
    model: str = "gpt-5.2-2025-12-11",
    id: str = "resp_67ccd3a9da748190baa7f1570fe91ac6",
    usage_: dict[str, Any] | None = None,
    incomplete_reason: str | None = None,
) -> dict[str, Any]:
    """A complete non-streaming Responses API body."""
    return {
        "id": id,
        "object": "response",
        "created_at": 1741476777,
        "status": status,
        "error": None,
        "incomplete_details": {"reason": incomplete_reason} if incomplete_reason else None,
        "instructions": None,
        "max_output_tokens": None,
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "reasoning": {"effort": None, "summary": None},
        "store": False,
        "temperature": 1.0,
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": usage_ or usage(),
        "metadata": {},
    }


def response_reply(body: dict[str, Any], headers: dict[str, str] | None = None) -> Reply:
    return json_reply(body, headers={**RATE_LIMIT_HEADERS, **(headers or {})})


def error_body(status: int, message: str) -> dict[str, Any]:
    error_type, code = ERROR_TYPES.get(status, ("server_error", None))
    return {"error": {"message": message, "type": error_type, "param": None, "code": code}}


def error_reply(status: int, message: str, headers: dict[str, str] | None = None) -> Reply:
    return json_reply(error_body(status, message), status=status, headers=headers)


def _pieces(value: str, size: int = 5) -> list[str]:
    return [value[i : i + size] for i in range(0, len(value), size)]


class _Sequencer:
    def __init__(self) -> None:
        self.number = 0
        self.frames: list[bytes] = []

    def emit(self, event_type: str, **fields: Any) -> None:
        self.frames.append(sse_frame({"type": event_type, "sequence_number": self.number, **fields}, event_type))
        self.number += 1


def _empty_item(item: dict[str, Any]) -> dict[str, Any]:
    if item["type"] == "message":
        return {**item, "status": "in_progress", "content": []}
    if item["type"] == "function_call":
        return {**item, "status": "in_progress", "arguments": ""}
    if item["type"] == "reasoning":
        return {**item, "summary": []}
    return item


def stream_frames(body: dict[str, Any], final: bool = True) -> list[bytes]:
    """The SSE events the real API sends for ``body`` (a complete response object).

    The terminal event is ``response.completed`` (or ``response.incomplete`` /
    ``response.failed`` after the body's status). ``final=False`` leaves it out.
    """
    seq = _Sequencer()
    pending = {**body, "status": "in_progress", "output": [], "usage": None}
    seq.emit("response.created", response=pending)
    seq.emit("response.in_progress", response=pending)
    for index, item in enumerate(body["output"]):
        seq.emit("response.output_item.added", output_index=index, item=_empty_item(item))
        if item["type"] == "message":
            for c_index, part in enumerate(item["content"]):
                ids = {"item_id": item["id"], "output_index": index, "content_index": c_index}
                seq.emit("response.content_part.added", **ids, part={**part, "text": ""})
                for piece in _pieces(part["text"]):
                    seq.emit("response.output_text.delta", **ids, delta=piece, logprobs=[])
                seq.emit("response.output_text.done", **ids, text=part["text"], logprobs=[])
                seq.emit("response.content_part.done", **ids, part=part)
        elif item["type"] == "function_call":
            ids = {"item_id": item["id"], "output_index": index}
            for piece in _pieces(item["arguments"]):
                seq.emit("response.function_call_arguments.delta", **ids, delta=piece)
            seq.emit("response.function_call_arguments.done", **ids, arguments=item["arguments"])
        elif item["type"] == "reasoning":
            for s_index, part in enumerate(item["summary"]):
                ids = {"item_id": item["id"], "output_index": index, "summary_index": s_index}
                seq.emit("response.reasoning_summary_part.added", **ids, part={**part, "text": ""})
                for piece in _pieces(part["text"]):
                    seq.emit("response.reasoning_summary_text.delta", **ids, delta=piece)
                seq.emit("response.reasoning_summary_text.done", **ids, text=part["text"])
                seq.emit("response.reasoning_summary_part.done", **ids, part=part)
        seq.emit("response.output_item.done", output_index=index, item=item)
    if final:
        terminal = {"completed": "response.completed", "incomplete": "response.incomplete"}
        seq.emit(terminal.get(body["status"], "response.failed"), response=body)
    return seq.frames


def stream_reply(body: dict[str, Any], cut_after: int | None = None, final: bool = True) -> Reply:
    return sse_reply(stream_frames(body, final=final), cut_after=cut_after, headers=RATE_LIMIT_HEADERS)


def stream_error_frame(code: str, message: str, sequence_number: int = 2) -> bytes:
    """The stream-level ``error`` event."""
    return sse_frame(
        {"type": "error", "code": code, "message": message, "param": None, "sequence_number": sequence_number},
        "error",
    )
