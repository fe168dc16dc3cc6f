"""The critic's quality gate (codali spec §3 "Critic Result").

Deterministic checks run first and cannot be argued away by a model: files touched
outside the architect's ``plan_targets``, and a check command (tests, linters) that
fails. The critic model's own verdict is then combined with them: any failure → FAIL.
The result travels back to the architect as a ``CODALI_RESPONSE v1`` with one
``critic.result``.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field

from codeloop.codali.request import AgentRequestError, json_objects
from codeloop.codali.response import CodaliResponse
from codeloop.codali.yamlish import YamlishError, parse_block, plain
from codeloop.index.code_index import normalize_path

_STATUS = re.compile(r"^\W*status\W*:\W*(PASS|FAIL)\b", re.I | re.M)
_BARE = re.compile(r"^\W*(PASS|FAIL)\b", re.M)


@dataclass(frozen=True)
class CriticResult:
    """The gate's decision for one round."""

    status: str
    """``PASS`` or ``FAIL``."""
    reasons: tuple[str, ...] = ()
    """Why it failed (empty on PASS)."""
    suggested_fixes: tuple[str, ...] = ()
    """What the architect should change."""
    touched_files: tuple[str, ...] = ()
    """Files the builder created, changed or deleted."""
    plan_targets: tuple[str, ...] = ()
    """Files the plan allowed."""
    warnings: tuple[str, ...] = field(default=())
    """``critic_failed`` on FAIL, plus anything the checks could not do."""

    def response(self, request_id: str | None = None) -> CodaliResponse:
        """The spec's ``critic.result`` envelope."""
        result = {"type": "critic.result", "status": self.status, "reasons": list(self.reasons),
                  "suggested_fixes": list(self.suggested_fixes), "touched_files": list(self.touched_files),
                  "plan_targets": list(self.plan_targets)}
        return CodaliResponse(request_id or f"critic-{int(time.time())}", (result,), self.warnings)


def outside_plan(touched: list[str], plan_targets: list[str]) -> list[str]:
    """Touched files not covered by a plan target (a target ending in ``/`` covers a directory)."""
    files = {normalize_path(t) for t in plan_targets if not t.endswith("/")}
    dirs = [normalize_path(t) + "/" for t in plan_targets if t.endswith("/")]
    return [p for p in touched if p not in files and not any(p.startswith(d) for d in dirs)]


def _items(text: str, key: str) -> list[str]:
    """The ``key:`` list of a verdict. Small models also write one sentence after the key
    instead of a list; that is one item (iterating the string gave one reason per character)."""
    start = text.find(f"{key}:")
    if start == -1:
        return []
    try:
        data = plain(parse_block(text[start:].split("\n\n")[0]))
    except YamlishError:
        data = {}
    return _listed(data.get(key) if isinstance(data, dict) else None)


def _json_verdict(text: str) -> tuple[str | None, list[str], list[str]] | None:
    """A verdict written as JSON: ``{"status": "PASS", "reasons": [...]}`` (or ``verdict``/
    ``result`` for ``status``), or the shapes a small model copies from the builder's calls,
    ``{"name": "status", "value": "PASS"}`` and ``{"name": "pass"}``."""
    try:
        for _, value in json_objects(text):
            status = next((value[k] for k in ("status", "verdict", "result") if k in value), None)
            if status is None and value.get("name") == "status":
                status = value.get("value")
            elif status is None and len(value) == 1 and "name" in value:
                status = value["name"]  # {"name": "pass"}: the 1.5B critic's whole verdict, seen in a run
            if isinstance(status, str) and status.strip().upper() in ("PASS", "FAIL"):
                return status.strip().upper(), _listed(value.get("reasons")), _listed(value.get("suggested_fixes"))
    except AgentRequestError:  # nested too deep to decode: no verdict from there on
        pass
    return None


def _listed(raw: object) -> list[str]:
    """A ``reasons``/``suggested_fixes`` value as a list: one sentence is one item."""
    if isinstance(raw, str):
        return [raw.strip()] if raw.strip() else []
    return [str(item) for item in raw if item] if isinstance(raw, list) else []


def parse_verdict(text: str) -> tuple[str | None, list[str], list[str]]:
    """The critic model's ``status`` (``None`` if absent), reasons and suggested fixes."""
    match = _STATUS.search(text) or _BARE.search(text)
    status = match.group(1).upper() if match else None
    reasons, fixes = _items(text, "reasons"), _items(text, "suggested_fixes")
    as_json = _json_verdict(text)
    # The status pattern also finds '"status": "FAIL"' inside a JSON verdict, whose
    # '"reasons": [...]' the plain-text lists do not match: the JSON's lists count then.
    if as_json is not None and (status is None or (status == as_json[0] and not reasons and not fixes)):
        return as_json
    return status, reasons, fixes


def judge(model_text: str, touched: list[str], plan_targets: list[str], check_failure: str | None) -> CriticResult:
    """Combine the deterministic checks with the critic model's verdict."""
    reasons: list[str] = []
    fixes: list[str] = []
    outside = outside_plan(touched, plan_targets)
    if outside:
        reasons.append(f"touched files outside allowed paths: {', '.join(outside)}")
    if check_failure:
        reasons.append(check_failure)
    status, model_reasons, model_fixes = parse_verdict(model_text)
    if status == "FAIL":
        reasons += model_reasons or ["critic model returned FAIL without reasons"]
    elif status is None:
        excerpt = " ".join(model_text.split())[:160]
        reasons.append(f"critic model gave no 'status: PASS|FAIL' line (it wrote: {excerpt!r})")
    fixes = [f"Address: {r}" for r in reasons if not r.startswith("critic model")] + model_fixes
    verdict = "FAIL" if reasons else "PASS"
    return CriticResult(verdict, tuple(reasons), tuple(fixes), tuple(touched), tuple(plan_targets),
                        ("critic_failed",) if verdict == "FAIL" else ())
