"""The need types of ``AGENT_REQUEST v1`` and their parameters (codali spec §2).

Each parameter has a type and a default; models' common variants are accepted and
normalized (``path`` for ``file``, ``max_depth``/``depth`` for ``maxDepth``, numbers
written as strings). Anything else is a :class:`NeedSpecError` naming the field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

ROLES = ("librarian", "architect", "builder", "critic", "interpreter")
"""Roles an agent may declare (spec §1)."""


@dataclass(frozen=True)
class Param:
    """One parameter of a need type."""

    kind: type
    """``str``, ``int`` or ``bool``."""
    required: bool = False
    """Must be present (see also ``one_of`` of the need)."""
    default: Any = None
    """Value when absent."""
    low: int | None = None
    """Smallest accepted integer."""
    high: int | None = None
    """Largest accepted integer (bigger values are clamped, not rejected)."""


@dataclass(frozen=True)
class NeedSpec:
    """Parameters of one need type."""

    params: dict[str, Param]
    aliases: dict[str, str]
    one_of: tuple[str, ...] = ()
    """At least one of these must be given (``docdex.open``: path or doc_id)."""


_FILE_ALIASES = {"path": "file"}

NEED_SPECS: dict[str, NeedSpec] = {
    "docdex.search": NeedSpec({"query": Param(str, True), "limit": Param(int, default=10, low=1, high=100)}, {}),
    "docdex.snippet": NeedSpec({"doc_id": Param(str, True), "window": Param(int, default=15, low=0, high=500)}, {}),
    "docdex.open": NeedSpec({"path": Param(str), "doc_id": Param(str), "start_line": Param(int, low=1),
                             "end_line": Param(int, low=1), "window": Param(int, low=0, high=2000)},
                            {"file": "path"}, one_of=("path", "doc_id")),
    "docdex.symbols": NeedSpec({"file": Param(str, True)}, _FILE_ALIASES),
    "docdex.ast": NeedSpec({"file": Param(str, True), "max_depth": Param(int, default=6, low=1, high=64),
                            "max_nodes": Param(int, default=1000, low=1, high=20000)},
                           {**_FILE_ALIASES, "maxDepth": "max_depth", "depth": "max_depth"}),
    "docdex.impact": NeedSpec({"file": Param(str, True)}, _FILE_ALIASES),
    "docdex.impact_diagnostics": NeedSpec({"file": Param(str), "limit": Param(int, default=50, low=1, high=1000)},
                                          _FILE_ALIASES),
    "docdex.tree": NeedSpec({"maxDepth": Param(int, default=3, low=1, high=32), "path": Param(str, default="")},
                            {"max_depth": "maxDepth", "depth": "maxDepth", "root": "path"}),
    "docdex.web": NeedSpec({"query": Param(str, True), "force_web": Param(bool, default=False)}, {}),
    "file.read": NeedSpec({"path": Param(str, True), "start_line": Param(int, low=1), "end_line": Param(int, low=1)},
                          {"file": "path"}),
    "file.list": NeedSpec({"root": Param(str, default="."), "pattern": Param(str, default="**/*"),
                           "limit": Param(int, default=1000, low=1, high=20000)}, {"path": "root", "glob": "pattern"}),
}

NEED_TYPES = tuple(NEED_SPECS)
"""Every supported need type, in spec order."""


class NeedSpecError(ValueError):
    """A need's parameter is missing or has the wrong type."""

    def __init__(self, reason: str, field: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.reason = reason
        self.field = field


def _coerce(name: str, value: Any, param: Param) -> Any:
    if param.kind is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in {"true", "false", "yes", "no"}:
            return value.lower() in {"true", "yes"}
        raise NeedSpecError(f"must be true or false, got {value!r}", name)
    if param.kind is int:
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise NeedSpecError(f"must be an integer, got {value!r}", name)
        try:
            number = int(value)
        except ValueError:
            raise NeedSpecError(f"must be an integer, got {value!r}", name) from None
        if param.low is not None and number < param.low:
            raise NeedSpecError(f"must be at least {param.low}, got {number}", name)
        return min(number, param.high) if param.high is not None else number
    if isinstance(value, dict | list) or value is None:
        raise NeedSpecError(f"must be a string, got {value!r}", name)
    text = str(value)
    if not text.strip():
        raise NeedSpecError("must not be empty", name)
    return text


def check_need(kind: str, params: dict[str, Any]) -> dict[str, Any]:
    """Validated parameters of a need of type ``kind`` (unknown extra fields are ignored)."""
    spec = NEED_SPECS[kind]
    given = {spec.aliases.get(k, k): v for k, v in params.items()}
    out: dict[str, Any] = {}
    for name, param in spec.params.items():
        value = given.get(name)
        if value is None:
            if param.required:
                raise NeedSpecError(f"required for {kind}", name)
            if param.default is not None:
                out[name] = param.default
            continue
        out[name] = _coerce(name, value, param)
    if spec.one_of and not any(name in out for name in spec.one_of):
        raise NeedSpecError(f"{kind} needs one of: {', '.join(spec.one_of)}", spec.one_of[0])
    return out
