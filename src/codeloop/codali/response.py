"""``CODALI_RESPONSE v1``: the one reply to an agent request (codali spec §1, §3, §5)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from codeloop.codali.yamlish import render

HEADER = "CODALI_RESPONSE v1"


@dataclass(frozen=True)
class CodaliResponse:
    """Every result of one request, plus ``meta`` (spec §3: all results in one response)."""

    request_id: str
    """The request's id (``critic-<ts>`` for critic results)."""
    results: tuple[dict[str, Any], ...]
    """One mapping per need that produced something, each with its ``type`` first."""
    warnings: tuple[str, ...] = ()
    """Every failure or skip (``file_not_found: path``, ``docdex_index_stale``, ``web_unavailable``...)."""
    repo_root: str | None = None
    """Absolute repository root (``meta.repo_root``)."""
    elapsed_ms: int | None = None
    """Time spent answering (``meta.elapsed_ms``)."""

    def meta(self) -> dict[str, Any]:
        """The ``meta`` mapping: repo_root, warnings, elapsed_ms (absent ones omitted)."""
        meta: dict[str, Any] = {}
        if self.repo_root is not None:
            meta["repo_root"] = self.repo_root
        meta["warnings"] = list(self.warnings)
        if self.elapsed_ms is not None:
            meta["elapsed_ms"] = self.elapsed_ms
        return meta

    def to_json(self) -> dict[str, Any]:
        """JSON form: ``{"CODALI_RESPONSE": "v1", "request_id", "results", "meta"}``."""
        return {"CODALI_RESPONSE": "v1", "request_id": self.request_id, "results": list(self.results),
                "meta": self.meta()}

    def to_text(self) -> str:
        """The spec's text form (YAML-like; multi-line strings as ``|`` blocks)."""
        body: dict[str, Any] = {"request_id": self.request_id, "results": list(self.results),
                                "meta": self.meta()}
        return "\n".join([HEADER, *render(body)]) + "\n"


def dumps(response: CodaliResponse, as_json: bool = False) -> str:
    """The response as text (default) or as indented JSON."""
    if as_json:
        return json.dumps(response.to_json(), indent=2, ensure_ascii=False) + "\n"
    return response.to_text()
