"""Request-side helpers the native adapters share (unified-llm spec §3.5, §3.6, §7.2).

- media: inline bytes or a local file path → (media type, base64) or a ``data:`` URI; a remote
  URL stays a URL;
- tool arguments: the dict-or-raw-string of :class:`ToolCallData` → JSON text or object
  (the model is untrusted: bad JSON is surfaced, never raised here; parsing a provider's
  argument string is :func:`codeloop.llm.types.tool_arguments_or_raw`);
- tool results: structured content → text for wires that only take text;
- ``provider_options``: merged into the native body, one level deep for dict values.
"""

from __future__ import annotations

import base64
import json
import mimetypes
import os
from collections.abc import Collection
from typing import Any

from codeloop.llm.errors import ConfigurationError
from codeloop.llm.types import MediaData, tool_arguments_or_raw


def is_local_path(url: str) -> bool:
    """Whether ``url`` names a local file (§3.5: starts with ``/``, ``./`` or ``~``)."""
    return url.startswith(("/", "./", "~"))


def inline_media(media: MediaData, default_type: str) -> tuple[str, str] | None:
    """``(media_type, base64)`` for bytes or a local file; None for a remote URL.

    Raises ConfigurationError naming the path when a local file cannot be read.
    """
    data = media.data
    media_type = media.media_type
    if data is None:
        url = media.url or ""
        if not is_local_path(url):
            return None
        path = os.path.expanduser(url)
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError as exc:
            raise ConfigurationError(
                f"cannot read the local file {url!r} given as media input: {exc.strerror or exc}", cause=exc
            ) from exc
        media_type = media_type or mimetypes.guess_type(path)[0]
    return media_type or default_type, base64.b64encode(data).decode("ascii")


def data_uri(media: MediaData, default_type: str) -> str:
    """A ``data:`` URI for bytes or a local file; a remote URL unchanged."""
    inline = inline_media(media, default_type)
    return str(media.url) if inline is None else f"data:{inline[0]};base64,{inline[1]}"


def arguments_text(arguments: dict[str, Any] | str) -> str:
    """Tool call arguments as the JSON text a wire carries (raw strings pass unchanged)."""
    return arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)


def arguments_object(arguments: dict[str, Any] | str) -> dict[str, Any]:
    """Tool call arguments as a JSON object, for wires that only accept objects.

    A raw string that is not a JSON object is kept under ``_raw_arguments`` so the model
    still sees what it sent; the tool result of that call reports the error.
    """
    if isinstance(arguments, dict):
        return arguments
    parsed = tool_arguments_or_raw(arguments)
    return parsed if isinstance(parsed, dict) else {"_raw_arguments": arguments}


def append_turn(turns: list[dict[str, Any]], role: str, key: str, items: list[dict[str, Any]]) -> None:
    """Add ``items`` as a ``role`` turn, merged into the last turn when it has that role (the
    wire requires alternating roles)."""
    if turns and turns[-1]["role"] == role:
        turns[-1][key].extend(items)
    else:
        turns.append({"role": role, key: items})


def put_present(body: dict[str, Any], **fields: Any) -> None:
    """Set each field whose value is not None (an unset parameter keeps the provider's default)."""
    body.update({key: value for key, value in fields.items() if value is not None})


def thinking_budget(provider: str, budgets: dict[str, int], effort: str) -> int:
    """The thinking-token budget a wire with fixed budgets gives ``reasoning_effort``."""
    if effort not in budgets:
        raise ConfigurationError(f"{provider}: reasoning_effort {effort!r} is unknown; use low, medium or high")
    return budgets[effort]


def result_text(content: str | dict[str, Any] | list[Any]) -> str:
    """Tool result content as text: strings unchanged, structures as JSON."""
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)


def merge_options(
    body: dict[str, Any], options: dict[str, Any] | None, skip: Collection[str] = (),
    extend: Collection[str] = (),
) -> None:
    """Merge ``options`` into ``body`` in place (§3.6 escape hatch).

    Keys in ``skip`` are adapter settings, not body fields. A dict value merges into an
    existing dict field (so ``generationConfig`` or ``reasoning`` extend what the adapter
    built); a list under a key in ``extend`` is appended (built-in tools join the function
    tools); anything else replaces the field.
    """
    for key, value in (options or {}).items():
        if key in skip:
            continue
        current = body.get(key)
        if key in extend and isinstance(value, list):
            body[key] = [*(current if isinstance(current, list) else []), *value]
        elif isinstance(value, dict) and isinstance(current, dict):
            body[key] = {**current, **value}
        else:
            body[key] = value


def options_for(provider_options: dict[str, Any] | None, provider: str) -> dict[str, Any]:
    """The ``provider_options`` entry of ``provider`` (empty when absent or not a dict)."""
    value = (provider_options or {}).get(provider)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigurationError(
            f"provider_options[{provider!r}] must be a dict of {provider} options, got {type(value).__name__}"
        )
    return value
