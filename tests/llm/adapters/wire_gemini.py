"""Gemini API (generativelanguage v1beta) wire shapes for the loopback server.

Shapes follow Google's API reference:
- ``models.generateContent`` / ``models.streamGenerateContent``:
  https://ai.google.dev/api/generate-content (GenerateContentResponse: ``candidates[].content``
  with role "model" and ``parts``, ``finishReason`` STOP / MAX_TOKENS / SAFETY / RECITATION /
  MALFORMED_FUNCTION_CALL, ``usageMetadata`` promptTokenCount / candidatesTokenCount /
  totalTokenCount / thoughtsTokenCount / cachedContentTokenCount, ``modelVersion``,
  ``responseId``; streaming with ``?alt=sse`` sends one ``data:`` event per chunk, CRLF
  line endings, no terminal sentinel: the last chunk carries finishReason and usage);
- parts: https://ai.google.dev/api/caching#Part (``text``, ``thought: true`` for thought
  summaries, ``functionCall {name, args}``, ``thoughtSignature`` as a sibling of the part's
  data: https://ai.google.dev/gemini-api/docs/thought-signatures);
- errors: https://ai.google.dev/gemini-api/docs/troubleshooting (google.rpc.Status JSON:
  {"error": {"code", "message", "status", "details"}}, 429 RESOURCE_EXHAUSTED with a
  ``google.rpc.RetryInfo`` detail carrying ``retryDelay``).
"""

from __future__ import annotations

from typing import Any

from .wire_loopback import Reply, json_reply, raw_reply, sse_frame, sse_reply

STATUSES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    408: "DEADLINE_EXCEEDED",
    422: "INVALID_ARGUMENT",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def text(value: str, thought_signature: str | None = None) -> dict[str, Any]:
    part: dict[str, Any] = {"text": value}
    if thought_signature:
        part["thoughtSignature"] = thought_signature
    return part


def thought(value: str) -> dict[str, Any]:
    return {"text": value, "thought": True}


def function_call(name: str, args: dict[str, Any], thought_signature: str | None = None) -> dict[str, Any]:
    part: dict[str, Any] = {"functionCall": {"name": name, "args": args}}
    if thought_signature:
        part["thoughtSignature"] = thought_signature
    return part


def usage(
    prompt: int = 14, candidates: int = 9, thoughts: int | None = None, cached: int | None = None
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "promptTokenCount": prompt,
        "candidatesTokenCount": candidates,
        "totalTokenCount": prompt + candidates + (thoughts or 0),
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": prompt}],
    }
    if thoughts is not None:
        meta["thoughtsTokenCount"] = thoughts
    if cached is not None:
        meta["cachedContentTokenCount"] = cached
    return meta


def response(
    parts: list[dict[str, Any]],
    finish_reason: str | None = "STOP",
    usage_: dict[str, Any] | None = None,
    model_version: str = "gemini-2.5-flash",
    response_id: str = "Il0taoSYJ5Cez7IPk9mR4Qg",
) -> dict[str, Any]:
    """A complete ``generateContent`` response body."""
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if finish_reason is not None:
        candidate["finishReason"] = finish_reason
    return {
        "candidates": [candidate],
        "usageMetadata": usage_ or usage(),
        "modelVersion": model_version,
        "responseId": response_id,
    }


def response_reply(body: dict[str, Any]) -> Reply:
    return json_reply(body)


def error_body(status: int, message: str, retry_delay: str | None = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": status, "message": message, "status": STATUSES.get(status, "UNKNOWN")}
    if retry_delay is not None:
        error["details"] = [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": retry_delay}]
    return {"error": error}


def error_reply(status: int, message: str, headers: dict[str, str] | None = None, retry_delay: str | None = None) -> Reply:
    if status == 413:
        # The front end answers oversized bodies itself, with HTML rather than a Status JSON.
        return raw_reply(
            b"<html><title>Error 413 (Request Entity Too Large)!!1</title></html>",
            status=413,
            content_type="text/html; charset=UTF-8",
            headers=headers,
        )
    return json_reply(error_body(status, message, retry_delay), status=status, headers=headers)


def stream_chunks(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Split a complete response into the chunks the streaming endpoint sends.

    Text parts come in pieces; each function call comes whole in its own chunk (as the
    API does); the last chunk carries finishReason and the full usageMetadata.
    """
    candidate = body["candidates"][0]
    chunks: list[dict[str, Any]] = []
    base = {"modelVersion": body["modelVersion"], "responseId": body["responseId"]}
    for part in candidate["content"]["parts"]:
        if "text" in part:
            value = part["text"]
            pieces = [value[i : i + 6] for i in range(0, len(value), 6)] or [""]
            for n, piece in enumerate(pieces):
                piece_part = {**part, "text": piece}
                if n < len(pieces) - 1:
                    piece_part.pop("thoughtSignature", None)
                chunks.append({"candidates": [{"content": {"parts": [piece_part], "role": "model"}, "index": 0}]})
        else:
            chunks.append({"candidates": [{"content": {"parts": [part], "role": "model"}, "index": 0}]})
    if not chunks:
        chunks.append({"candidates": [{"content": {"parts": [], "role": "model"}, "index": 0}]})
    last = chunks[-1]["candidates"][0]
    if "finishReason" in candidate:
        last["finishReason"] = candidate["finishReason"]
    chunks[-1]["usageMetadata"] = body["usageMetadata"]
    return [{**chunk, **base} for chunk in chunks]


def stream_frames(body: dict[str, Any]) -> list[bytes]:
    return [sse_frame(chunk, newline="\r\n") for chunk in stream_chunks(body)]


def stream_reply(body: dict[str, Any], cut_after: int | None = None) -> Reply:
    return sse_reply(stream_frames(body), cut_after=cut_after)
