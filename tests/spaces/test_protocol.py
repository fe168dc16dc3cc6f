"""Validation of operations messages (spaces protocol §Validation Rules, §JSON Schema)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codeloop.spaces.operations import (
    CreateFileOperation,
    EditFileOperation,
    EventsMessage,
    OperationValidationError,
    ShellOperation,
    parse_operation,
    validate_operation,
    validate_operations_message,
)

FIXTURES = Path(__file__).parent / "fixtures"


def _msg(*ops: object) -> dict[str, object]:
    return {"protocolVersion": "1.0", "operations": list(ops)}


@pytest.mark.parametrize("path", ["a..b", "..hidden", "dir/file..txt", "x/...", "a/b/c.ts", "./a"])
def test_path_with_dots_that_is_not_a_dot_dot_segment_is_valid(path: str) -> None:
    assert validate_operation({"type": "readFile", "path": path}).success


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("../etc/passwd", "'..' segment"),
        ("a/../../b", "'..' segment"),
        ("..", "'..' segment"),
        ("/etc/passwd", "leading '/'"),
        ("a\0b", "NUL"),
        ("a" * 256, "at most 255"),
    ],
)
def test_path_rules_reject_with_field_message(path: str, why: str) -> None:
    result = validate_operation({"type": "deleteFile", "path": path})
    assert not result.success
    assert result.error is not None
    assert result.error.startswith("operation.path:")
    assert why in result.error


def test_path_of_exactly_255_chars_is_valid() -> None:
    assert validate_operation({"type": "readFile", "path": "a" * 255}).success


def test_message_names_the_operation_index_and_field() -> None:
    result = validate_operations_message(_msg({"type": "message", "content": "hi"},
                                              {"type": "shell", "command": "ls", "timeout": 10}))
    assert not result.success
    assert result.error == "operations[1].timeout: must be between 1000 and 3600000 ms (got 10)"


@pytest.mark.parametrize(
    ("op", "expected"),
    [
        ({"type": "shell"}, "operation.command: is required for a shell operation"),
        ({"type": "copyFile", "path": "a"}, "operation.type: must be one of message, createFile, readFile, "
                                            "editFile, deleteFile, shell (got 'copyFile')"),
        ({"path": "a"}, "operation.type: is required"),
        ({"type": "createFile", "path": "a", "content": 3}, "operation.content: must be a string (got number)"),
        ({"type": "createFile", "path": "a", "content": "", "overwrite": "yes"},
         "operation.overwrite: must be true or false (got string)"),
        ({"type": "readFile", "path": "a", "encoding": "latin-1"}, 'operation.encoding: must be "utf-8" or "base64"'),
        ({"type": "editFile", "path": "a", "edits": [{"oldContent": "x"}]},
         "operation.edits[0].newContent: is required"),
        ({"type": "shell", "command": "ls", "env": {"A": 1}}, "operation.env.A: must be a string (got number)"),
        ({"type": "shell", "command": "ls", "timeout": True}, "operation.timeout: must be an integer"),
        ({"type": "shell", "command": "ls", "timeout": 1500.5}, "operation.timeout: must be an integer"),
        ({"type": "shell", "command": "x" * 4097}, "operation.command: must be at most 4096 characters"),
        ({"type": "message", "content": "x" * 100_001}, "operation.content: must be at most 100000 characters"),
        ({"type": "message", "id": 7, "content": "x"}, "operation.id: must be a string (got number)"),
        ("shell", "operation: must be an object"),
    ],
)
def test_invalid_operation_messages(op: object, expected: str) -> None:
    result = validate_operation(op)
    assert not result.success
    assert result.error is not None and expected in result.error


def test_timeout_bounds_are_inclusive() -> None:
    assert validate_operation({"type": "shell", "command": "ls", "timeout": 1000}).success
    assert validate_operation({"type": "shell", "command": "ls", "timeout": 3_600_000}).success
    assert not validate_operation({"type": "shell", "command": "ls", "timeout": 999}).success
    assert not validate_operation({"type": "shell", "command": "ls", "timeout": 3_600_001}).success


def test_integral_float_timeout_is_an_integer_as_in_json_schema() -> None:
    op = parse_operation({"type": "shell", "command": "ls", "timeout": 2000.0})
    assert isinstance(op, ShellOperation) and op.timeout == 2000


def test_file_content_limit_is_10_mb_of_bytes() -> None:
    ten_mb = 10 * 1024 * 1024
    assert validate_operation({"type": "createFile", "path": "a", "content": "x" * ten_mb}).success
    big = validate_operation({"type": "createFile", "path": "a", "content": "é" * (ten_mb // 2 + 1)})
    assert not big.success and "10 MB" in (big.error or "")


def test_extra_properties_are_accepted_like_the_schema() -> None:
    op = parse_operation({"type": "readFile", "path": "a", "note": "ignored"})
    assert op.path == "a"


def test_defaults_of_create_file() -> None:
    op = parse_operation({"type": "createFile", "path": "a", "content": "x"})
    assert isinstance(op, CreateFileOperation)
    assert (op.encoding, op.overwrite, op.id) == ("utf-8", False, None)


def test_parse_operation_raises_with_message() -> None:
    with pytest.raises(OperationValidationError, match=r"operation\.edits: must be an array"):
        parse_operation({"type": "editFile", "path": "a", "edits": "x"})


def test_parse_edit_file() -> None:
    op = parse_operation({"type": "editFile", "path": "a", "edits": [{"oldContent": "a", "newContent": "b"}]})
    assert isinstance(op, EditFileOperation) and op.edits[0].newContent == "b"


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ([], "message: must be a JSON object"),
        ({"operations": []}, 'protocolVersion: is required and must be "1.0"'),
        ({"protocolVersion": "2.0", "operations": []}, 'protocolVersion: must be "1.0" (got \'2.0\')'),
        ({"protocolVersion": "1.0"}, "operations: is required"),
        ({"protocolVersion": "1.0", "operations": {}}, "operations: must be an array (got object)"),
    ],
)
def test_envelope_errors(message: object, expected: str) -> None:
    result = validate_operations_message(message)
    assert not result.success and expected in (result.error or "")


@pytest.mark.parametrize("name", ["example1_operations", "example2_operations", "example2_final_operations",
                                  "example3_operations"])
def test_spec_example_operations_are_valid(name: str) -> None:
    raw = json.loads((FIXTURES / f"{name}.json").read_text())
    assert validate_operations_message(raw).success


@pytest.mark.parametrize("name", ["example1_events", "example2_events", "example3_events_paused",
                                  "example3_events_resumed"])
def test_spec_example_events_parse_into_the_event_models(name: str) -> None:
    raw = json.loads((FIXTURES / f"{name}.json").read_text())
    message = EventsMessage.model_validate(raw)
    assert [e.type for e in message.events] == [e["type"] for e in raw["events"]]
