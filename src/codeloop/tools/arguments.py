"""The VALIDATE step: parse a call's arguments and check them against the tool's schema.

Models send arguments as a JSON string or an already-decoded object; both land here.
Every problem becomes one :class:`ArgumentError` whose message names the argument, what
was expected and what arrived, so a small model can fix its call in one try.

Two validators, one verdict. ``jsonschema`` (draft 2020-12) is the judge: it decides every
call it sees and words every error. It costs ~30 µs a call, a seventh of an agent round, so a
schema made only of keywords whose meaning is the same in draft 7 and 2020-12
(:data:`_SAME_IN_DRAFT_7`) also gets a ``fastjsonschema`` check compiled to Python (~1 µs):
arguments it accepts are accepted; whatever it rejects, or cannot compile, goes to
``jsonschema``. So the fast check can only save time, never let through what the judge would
refuse: a property-based test over every built-in tool's schema holds it to that.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import ValidationError


_JSON_TYPE_NAMES = {
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    list: "array",
    dict: "object",
    type(None): "null",
}


class ArgumentError(ValueError):
    """Raised when arguments are malformed or do not match the tool's schema."""


def parse_arguments(tool_name: str, arguments: Mapping[str, Any] | str | None) -> dict[str, Any]:
    """Turn ``arguments`` into a dict; a JSON string is decoded (empty means ``{}``)."""
    if arguments is None:
        return {}
    if isinstance(arguments, str):
        if not arguments.strip():
            return {}
        try:
            decoded = json.loads(arguments)
        except json.JSONDecodeError as exc:
            raise ArgumentError(
                f"Invalid arguments for tool '{tool_name}': not valid JSON ({exc.msg} at line "
                f"{exc.lineno} column {exc.colno}). Send the arguments as one JSON object, "
                'for example {"file_path": "src/app.py"}.'
            ) from None
        except RecursionError:
            raise ArgumentError(
                f"Invalid arguments for tool '{tool_name}': the JSON is nested too deeply to read. Send "
                'the arguments as one flat JSON object, for example {"file_path": "src/app.py"}.'
            ) from None
        arguments = decoded
    if not isinstance(arguments, Mapping):
        raise ArgumentError(
            f"Invalid arguments for tool '{tool_name}': expected a JSON object, got "
            f"{_type_name(arguments)}."
        )
    return dict(arguments)


def validate_arguments(tool_name: str, schema: Mapping[str, Any], arguments: dict[str, Any]) -> None:
    """Raise :class:`ArgumentError` listing every schema violation of ``arguments``."""
    validator, fast = _validators_of(schema)
    if fast is not None:
        try:
            fast(arguments)
            return
        except Exception:  # JsonSchemaException, or anything odd: the judge decides, and words the errors
            pass
    errors = sorted(validator.iter_errors(arguments), key=lambda e: list(e.absolute_path))
    if not errors:
        return
    problems = [_describe(error, schema) for error in errors]
    raise ArgumentError(f"Invalid arguments for tool '{tool_name}': " + "; ".join(problems) + ".")


def drop_empty_optionals(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> dict[str, Any]:
    """``arguments`` as a small model meant them (issue 20): an *optional* argument holding an
    empty value (an empty or blank string, null, an empty list or object where a value or an
    item is needed) or a
    number below its minimum counts as absent, so the tool uses its default; a number above
    its maximum is clamped to it. Required and unknown arguments are kept as given (VALIDATE
    judges them). Used for local / small-window sessions only."""
    props: Mapping[str, Any] = schema.get("properties", {}) or {}
    required = set(schema.get("required", []) or [])
    kept: dict[str, Any] = {}
    for name, value in arguments.items():
        spec = props.get(name)
        if name in required or not isinstance(spec, Mapping):
            kept[name] = value
        elif not _empty(value, spec):
            kept[name] = _clamped(value, spec)
    return kept


def _empty(value: Any, spec: Mapping[str, Any]) -> bool:
    if value is None or (isinstance(value, str) and not value.strip()):
        return True
    if isinstance(value, list | dict) and not value:  # empty where a value or an item is needed
        kind = "array" if isinstance(value, list) else "object"
        return spec.get("type") != kind or int(spec.get("minItems", 0)) > 0
    minimum = spec.get("minimum")
    return _number(value) and isinstance(minimum, int | float) and value < minimum


def _clamped(value: Any, spec: Mapping[str, Any]) -> Any:
    maximum = spec.get("maximum")
    return maximum if _number(value) and isinstance(maximum, int | float) and value > maximum else value


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


FastCheck = Callable[[Any], Any]
"""A compiled ``fastjsonschema`` check: returns when valid, raises ``JsonSchemaException``."""

_BY_IDENTITY: dict[int, tuple[Mapping[str, Any], Draft202012Validator, FastCheck | None]] = {}
"""Validators by the schema object they were built for: a tool's schema is the same object on
every call, so the hot path skips serializing it (the entry holds the schema, so its id
cannot be reused while cached). Tool schemas are not changed after registration."""


def _validator_of(schema: Mapping[str, Any]) -> Draft202012Validator:
    return _validators_of(schema)[0]


def _validators_of(schema: Mapping[str, Any]) -> tuple[Draft202012Validator, FastCheck | None]:
    hit = _BY_IDENTITY.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1], hit[2]
    schema_json = json.dumps(schema, sort_keys=True)
    validator, fast = _validator(schema_json), _fast_check(schema_json)
    if len(_BY_IDENTITY) >= 1024:
        _BY_IDENTITY.clear()
    _BY_IDENTITY[id(schema)] = (schema, validator, fast)
    return validator, fast


_SAME_IN_DRAFT_7 = frozenset({
    "type", "properties", "required", "additionalProperties", "patternProperties", "propertyNames",
    "minProperties", "maxProperties", "items", "minItems", "maxItems", "uniqueItems", "enum", "const",
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength",
    "maxLength", "pattern", "anyOf", "oneOf", "allOf", "not", "title", "description", "default",
    "examples", "$comment",
})
"""Keywords that mean the same in draft 7 (``fastjsonschema``'s newest) and 2020-12. Left out on
purpose: ``items`` as a list and ``prefixItems`` (changed meaning), ``$ref``/``$defs`` and the
``unevaluated*``/``dependent*`` keywords (2020-12 only), and ``format`` (draft 7 checks it,
2020-12 only annotates)."""

_VALUE_KEYWORDS = frozenset({"enum", "const", "default", "examples", "title", "description", "$comment",
                             "required", "type"})
"""Keywords whose value is data, not a schema to look into."""


def _same_in_draft_7(schema: Any) -> bool:
    """True when ``schema`` (and every schema inside it) uses only :data:`_SAME_IN_DRAFT_7`."""
    if isinstance(schema, bool):
        return True
    if not isinstance(schema, dict) or not set(schema) <= _SAME_IN_DRAFT_7:
        return False
    for key, value in schema.items():
        if key in _VALUE_KEYWORDS:
            continue
        if key in ("properties", "patternProperties"):
            if not isinstance(value, dict) or not all(_same_in_draft_7(v) for v in value.values()):
                return False
        elif key in ("anyOf", "oneOf", "allOf"):
            if not isinstance(value, list) or not all(_same_in_draft_7(v) for v in value):
                return False
        elif key in ("additionalProperties", "items", "not", "propertyNames"):
            if not _same_in_draft_7(value):  # ``items`` as a list is not a schema: refused here
                return False
    return True


@lru_cache(maxsize=256)
def _fast_check(schema_json: str) -> FastCheck | None:
    schema = json.loads(schema_json)
    if not _same_in_draft_7(schema):
        return None
    import fastjsonschema  # on the first validation, not at start (cold start), as jsonschema

    try:
        check: FastCheck = fastjsonschema.compile({**schema, "$schema": "http://json-schema.org/draft-07/schema#"})
    except Exception:  # whatever it cannot compile, the judge handles alone
        return None
    return check


@lru_cache(maxsize=256)
def _validator(schema_json: str) -> Draft202012Validator:
    # Imported on the first validation, not at start (cold start of `codeloop run`).
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    schema = json.loads(schema_json)
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        raise ArgumentError(f"the tool's own parameter schema is invalid: {exc.message}") from None
    return Draft202012Validator(schema)


def _describe(error: ValidationError, schema: Mapping[str, Any]) -> str:
    where = _argument_name(error)
    if error.validator == "required":
        missing = error.message.split("'")[1] if "'" in error.message else error.message
        return f"missing required argument '{missing}'"
    if error.validator == "additionalProperties":
        known = ", ".join(sorted(schema.get("properties", {}))) or "none"
        extra = sorted(set(error.instance) - set(schema.get("properties", {})))
        names = ", ".join(f"'{name}'" for name in extra)
        return f"unexpected argument {names} (valid arguments: {known})"
    if error.validator == "type":
        expected = error.validator_value
        expected_text = " or ".join(expected) if isinstance(expected, list) else str(expected)
        return (
            f"argument '{where}' must be of type {expected_text}, got "
            f"{_type_name(error.instance)} ({_preview(error.instance)})"
        )
    if error.validator == "enum":
        options = ", ".join(json.dumps(v) for v in error.validator_value)
        return f"argument '{where}' must be one of {options}, got {_preview(error.instance)}"
    return f"argument '{where}': {error.message}"


def _argument_name(error: ValidationError) -> str:
    parts = [str(p) if isinstance(p, str) else f"[{p}]" for p in error.absolute_path]
    return "".join(p if p.startswith("[") or i == 0 else f".{p}" for i, p in enumerate(parts)) or "(root)"


def _type_name(value: object) -> str:
    return _JSON_TYPE_NAMES.get(type(value), type(value).__name__)


def _preview(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "..."
