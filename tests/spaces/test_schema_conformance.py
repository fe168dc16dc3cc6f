"""Our validator and the spec's JSON Schema agree (spaces protocol §JSON Schema).

The schema cannot express the path rules of §Validation Rules, so generated paths come from
two known pools: ``SAFE_PATHS`` obey every rule, ``RULE_BREAKING_PATHS`` break one that only
the rules (not the schema) check. The expectation is therefore "schema accepts and no
rule-breaking path is present", computed from the generator, not from our code.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
from hypothesis import given, settings
from hypothesis import strategies as st

from codeloop.spaces.operations import validate_operation, validate_operations_message

SCHEMA = json.loads((Path(__file__).parent / "fixtures" / "operations.schema.json").read_text())
VALIDATOR = jsonschema.Draft7Validator(SCHEMA)
OPERATION_VALIDATOR = jsonschema.Draft7Validator({**SCHEMA, "$ref": "#/definitions/Operation"})

RULE_BREAKING_PATHS = ["../x", "a/../../b", "/etc/passwd", "..", "a\0b"]
SAFE_PATHS = st.one_of(
    st.from_regex(r"[a-z0-9_][a-z0-9_.-]{0,12}(/[a-z0-9_][a-z0-9_.-]{0,12}){0,3}", fullmatch=True),
    st.sampled_from(["a..b", "..hidden", "x/...", "", "a" * 255]),
)
TOO_LONG = st.just("b" * 256)

scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 5_000_000), st.floats(allow_nan=False),
                    st.text(max_size=8))
any_json = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                         st.dictionaries(st.text(max_size=5), inner, max_size=3)),
                        max_leaves=6)


def _field_value(field: str) -> st.SearchStrategy[Any]:
    path_like = st.one_of(SAFE_PATHS, st.sampled_from(RULE_BREAKING_PATHS), TOO_LONG)
    good: dict[str, st.SearchStrategy[Any]] = {
        "id": st.text(max_size=6),
        "content": st.text(max_size=20),
        "path": path_like,
        "cwd": path_like,
        "encoding": st.sampled_from(["utf-8", "base64", "latin1"]),
        "overwrite": st.booleans(),
        "command": st.one_of(st.text(max_size=20), st.just("x" * 4097)),
        "timeout": st.one_of(st.integers(0, 4_000_000), st.sampled_from([1000, 3_600_000, 2000.0, 1500.5])),
        "env": st.dictionaries(st.text(max_size=4), st.one_of(st.text(max_size=4), st.integers()), max_size=3),
        "edits": st.lists(st.one_of(
            st.fixed_dictionaries({"oldContent": st.text(max_size=4), "newContent": st.text(max_size=4)}),
            st.dictionaries(st.sampled_from(["oldContent", "newContent"]), any_json, max_size=2),
        ), max_size=3),
    }
    return st.one_of(good[field], good[field], good[field], any_json)


PATH_FIELD = {"createFile": "path", "readFile": "path", "editFile": "path", "deleteFile": "path", "shell": "cwd"}
FIELDS = ["id", "content", "path", "cwd", "encoding", "overwrite", "command", "timeout", "env", "edits"]


@st.composite
def operations(draw: st.DrawFn) -> Any:
    if draw(st.integers(0, 20)) == 0:
        return draw(any_json)
    op: dict[str, Any] = {}
    if draw(st.integers(0, 15)):
        op["type"] = draw(st.sampled_from(["message", "createFile", "readFile", "editFile", "deleteFile", "shell",
                                           "bogus"]))
    for field in draw(st.lists(st.sampled_from(FIELDS), unique=True, max_size=6)):
        op[field] = draw(_field_value(field))
    return op


def _uses_rule_path(op: Any) -> bool:
    if not isinstance(op, dict):
        return False
    field = PATH_FIELD.get(op.get("type"))  # type: ignore[arg-type]
    return field is not None and isinstance(op.get(field), str) and op[field] in RULE_BREAKING_PATHS


@settings(max_examples=150, deadline=None)
@given(operations())
def test_single_operation_agrees_with_schema(op: Any) -> None:
    schema_ok = OPERATION_VALIDATOR.is_valid(op)
    command_too_long = isinstance(op, dict) and op.get("type") == "shell" and op.get("command") == "x" * 4097
    expected = schema_ok and not _uses_rule_path(op)
    assert command_too_long is False or not schema_ok  # the schema itself caps commands at 4096
    assert validate_operation(op).success == expected, (op, validate_operation(op).error)


@settings(max_examples=80, deadline=None)
@given(st.lists(operations(), max_size=4),
       st.sampled_from(["1.0", "1.1", None]),
       st.booleans())
def test_operations_message_agrees_with_schema(ops: list[Any], version: str | None, extra: bool) -> None:
    message: dict[str, Any] = {"operations": ops}
    if version is not None:
        message["protocolVersion"] = version
    if extra:
        message["note"] = "extra properties are allowed"
    expected = VALIDATOR.is_valid(message) and not any(_uses_rule_path(op) for op in ops)
    assert validate_operations_message(message).success == expected
