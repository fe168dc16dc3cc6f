"""Wire models of the spaces operations/events protocol (spaces protocol §Message Format).

Validation accepts exactly what the spec's JSON Schema (§JSON Schema) plus its validation
rules (§Validation Rules) accept:

- an operations message is an object with ``protocolVersion == "1.0"`` and an
  ``operations`` array; unknown extra properties are allowed (the schema does not forbid them);
- each operation is an object whose ``type`` is one of the six operation types, with the
  required fields of that type and correctly typed optional fields;
- ``path`` and ``cwd``: relative (no leading ``/``), no ``..`` *segment* (``a..b`` is a valid
  name), no NUL byte, at most 255 characters;
- message ``content`` at most 100,000 characters; file ``content`` at most 10 MB once encoded;
- ``command`` at most 4096 characters; ``timeout`` an integer in 1000..3600000 (ms).

Messages name the field of the operation that is wrong (``operations[2].timeout: ...``).
The events message is what the runtime answers; ``event_to_json`` gives its wire form (unset
optional fields left out). Pydantic appears only here, at the wire edge.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

PROTOCOL_VERSION = "1.0"
OPERATION_TYPES = ("message", "createFile", "readFile", "editFile", "deleteFile", "shell")
CREATE_FILE, READ_FILE, EDIT_FILE, DELETE_FILE = "createFile", "readFile", "editFile", "deleteFile"
"""The wire's file operation types, for what reads messages and events (the console's diffs)."""
FILE_CHANGES = (CREATE_FILE, EDIT_FILE, DELETE_FILE)
"""The operation types that change one named file."""
MAX_PATH_CHARS = 255
MAX_MESSAGE_CHARS = 100_000
MAX_FILE_BYTES = 10 * 1024 * 1024
MAX_COMMAND_CHARS = 4096
MIN_TIMEOUT_MS = 1000
MAX_TIMEOUT_MS = 3_600_000

# ----------------------------------------------------------------------------- events

Encoding = Literal["utf-8", "base64"]
RunStatus = Literal["completed", "awaiting_approval", "error"]
ErrorCategory = Literal["validation", "policy", "execution", "timeout", "system"]


class Wire(BaseModel):
    """Base of the protocol's models: frozen, unknown fields ignored."""

    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)


class _Event(Wire):
    model_config = ConfigDict(extra="forbid", frozen=True)
    timestamp: str


class _OperationEvent(_Event):
    type: str
    operationId: str | None = None


class _FileEvent(_OperationEvent):
    path: str
    success: bool


class UserMessageEvent(_Event):
    type: Literal["userMessage"] = "userMessage"
    content: str


class MessageEvent(_OperationEvent):
    type: Literal["message"] = "message"
    success: Literal[True] = True


class CreateFileEvent(_FileEvent):
    type: Literal["createFile"] = "createFile"
    error: str | None = None
    bytesWritten: int | None = None


class ReadFileEvent(_FileEvent):
    type: Literal["readFile"] = "readFile"
    content: str | None = None
    encoding: Encoding | None = None
    size: int | None = None
    error: str | None = None


class EditFileEvent(_FileEvent):
    type: Literal["editFile"] = "editFile"
    editsApplied: int | None = None
    error: str | None = None


class DeleteFileEvent(_FileEvent):
    type: Literal["deleteFile"] = "deleteFile"
    error: str | None = None


class ShellEvent(_OperationEvent):
    type: Literal["shell"] = "shell"
    command: str
    success: bool
    exitCode: int | None = None
    stdout: str | None = None
    stderr: str | None = None
    durationMs: int | None = None
    error: str | None = None
    timedOut: bool | None = None


class ApprovalDetails(Wire):
    command: str | None = None
    path: str | None = None
    policy: str | None = None


class ApprovalRequiredEvent(_Event):
    type: Literal["approvalRequired"] = "approvalRequired"
    operationId: str
    operationType: str
    reason: str
    details: ApprovalDetails


class PolicyDeniedEvent(_OperationEvent):
    type: Literal["policyDenied"] = "policyDenied"
    operationType: str
    reason: str
    suggestion: str | None = None


class ErrorEvent(_OperationEvent):
    type: Literal["error"] = "error"
    category: ErrorCategory
    message: str
    details: dict[str, Any] | None = None


Event = Annotated[UserMessageEvent | MessageEvent | CreateFileEvent | ReadFileEvent | EditFileEvent
                  | DeleteFileEvent | ShellEvent | ApprovalRequiredEvent | PolicyDeniedEvent | ErrorEvent,
                  Field(discriminator="type")]


class EventsMessage(Wire):
    protocolVersion: Literal["1.0"] = "1.0"
    runId: str
    events: list[Event]
    status: RunStatus


class Approval(Wire):
    """The structured approval of spaces protocol §Approval Flow step 2."""

    operationId: str
    decision: Literal["approved", "denied"]
    reason: str | None = None


def event_to_json(event: BaseModel) -> dict[str, Any]:
    """The wire form of an event: optional fields that are unset are left out."""
    return event.model_dump(mode="json", exclude_none=True)


def events_message_to_json(message: EventsMessage) -> dict[str, Any]:
    """The wire form of an events message (``None`` fields of events left out)."""
    return {"protocolVersion": message.protocolVersion, "runId": message.runId, "status": message.status,
            "events": [event_to_json(e) for e in message.events]}


# ----------------------------------------------------------------------------- operations


class _Operation(Wire):
    type: str
    id: str | None = None


class MessageOperation(_Operation):
    type: Literal["message"] = "message"
    content: str


class CreateFileOperation(_Operation):
    type: Literal["createFile"] = "createFile"
    path: str
    content: str
    encoding: Encoding = "utf-8"
    overwrite: bool = False


class ReadFileOperation(_Operation):
    type: Literal["readFile"] = "readFile"
    path: str
    encoding: Encoding = "utf-8"


class FileEdit(Wire):
    oldContent: str
    newContent: str


class EditFileOperation(_Operation):
    type: Literal["editFile"] = "editFile"
    path: str
    edits: list[FileEdit]


class DeleteFileOperation(_Operation):
    type: Literal["deleteFile"] = "deleteFile"
    path: str


class ShellOperation(_Operation):
    type: Literal["shell"] = "shell"
    command: str
    cwd: str | None = None
    timeout: int | None = None
    env: dict[str, str] | None = None


Operation = Annotated[MessageOperation | CreateFileOperation | ReadFileOperation | EditFileOperation
                      | DeleteFileOperation | ShellOperation, Field(discriminator="type")]


class OperationsMessage(Wire):
    protocolVersion: Literal["1.0"] = "1.0"
    operations: list[Operation]


# ----------------------------------------------------------------------------- validation


class OperationValidationError(ValueError):
    """Raised by :func:`parse_operation` for an operation the protocol does not accept."""


@dataclass(frozen=True)
class ValidationResult:
    """Outcome of :func:`validate_operation` (the TS package's ``{success, data?, error?}``)."""

    success: bool
    """True when the input is a valid operation."""
    data: Any = None
    """The parsed operation model when ``success``."""
    error: str | None = None
    """One line per problem, each naming the field, when not ``success``."""


def _is_int(value: object) -> bool:
    # JSON Schema "integer" accepts 1000.0 (jsonschema treats integral floats as integers)
    # but never a boolean.
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and math.isfinite(value) and value.is_integer()


_JSON_TYPES: tuple[tuple[type | tuple[type, ...], str], ...] = (
    (type(None), "null"), (bool, "boolean"), ((int, float), "number"), (str, "string"), (list, "array"),
    (dict, "object"))
"""JSON type names by Python type, in the order they are tried (a bool is not a number)."""


def _json_type(value: object) -> str:
    return next((name for kinds, name in _JSON_TYPES if isinstance(value, kinds)), type(value).__name__)


def path_problem(path: str) -> str | None:
    """Why ``path`` breaks the spec's path rules, or ``None`` when it is valid.

    Only a ``..`` *segment* is traversal: ``a..b`` and ``..hidden`` are ordinary names.
    """
    if "\0" in path:
        return "must not contain a NUL byte"
    if path.startswith("/"):
        return "must be relative to the workspace (no leading '/')"
    if ".." in path.split("/"):
        return "must not contain a '..' segment (parent traversal)"
    if len(path) > MAX_PATH_CHARS:
        return f"must be at most {MAX_PATH_CHARS} characters (got {len(path)})"
    return None


def _encoded_size(content: str, encoding: object) -> int:
    if encoding == "base64":
        stripped = content.rstrip("=")
        return len(stripped) * 3 // 4
    return len(content.encode("utf-8", "surrogatepass"))


_MODELS: dict[str, type[BaseModel]] = {
    model.model_fields["type"].default: model
    for model in (MessageOperation, CreateFileOperation, ReadFileOperation, EditFileOperation,
                  DeleteFileOperation, ShellOperation)
}
_FIELD_KINDS = {"encoding": "encoding", "overwrite": "boolean", "edits": "edits", "timeout": "timeout",
                "env": "env"}
"""How a field is checked, per the spec's JSON Schema (any other field: a string)."""
# The fields, and which are required, come from the models in declaration order, so the
# validation and the models cannot disagree.
_ALLOWED_FIELDS: dict[str, dict[str, str]] = {
    op_type: {name: _FIELD_KINDS.get(name, "string") for name in model.model_fields if name != "type"}
    for op_type, model in _MODELS.items()
}
_REQUIRED: dict[str, tuple[str, ...]] = {
    op_type: tuple(name for name, info in model.model_fields.items() if info.is_required())
    for op_type, model in _MODELS.items()
}


def _field_problems(field: str, kind: str, value: object, where: str) -> list[str]:
    at = f"{where}.{field}"
    if kind == "string":
        return [] if isinstance(value, str) else [f"{at}: must be a string (got {_json_type(value)})"]
    if kind == "boolean":
        return [] if isinstance(value, bool) else [f"{at}: must be true or false (got {_json_type(value)})"]
    if kind == "encoding":
        return [] if value in ("utf-8", "base64") else [f"{at}: must be \"utf-8\" or \"base64\" (got {value!r})"]
    if kind == "timeout":
        if not _is_int(value):
            return [f"{at}: must be an integer number of milliseconds (got {_json_type(value)})"]
        assert isinstance(value, (int, float))
        if not MIN_TIMEOUT_MS <= value <= MAX_TIMEOUT_MS:
            return [f"{at}: must be between {MIN_TIMEOUT_MS} and {MAX_TIMEOUT_MS} ms (got {int(value)})"]
        return []
    if kind == "env":
        if not isinstance(value, dict):
            return [f"{at}: must be an object of string values (got {_json_type(value)})"]
        return [f"{at}.{k}: must be a string (got {_json_type(v)})" for k, v in value.items()
                if not isinstance(v, str)]
    if kind == "edits":
        if not isinstance(value, list):
            return [f"{at}: must be an array of {{oldContent, newContent}} objects (got {_json_type(value)})"]
        problems: list[str] = []
        for i, edit in enumerate(value):
            e_at = f"{at}[{i}]"
            if not isinstance(edit, dict):
                problems.append(f"{e_at}: must be an object with oldContent and newContent")
                continue
            for key in ("oldContent", "newContent"):
                if key not in edit:
                    problems.append(f"{e_at}.{key}: is required")
                elif not isinstance(edit[key], str):
                    problems.append(f"{e_at}.{key}: must be a string (got {_json_type(edit[key])})")
        return problems
    raise AssertionError(kind)


def _operation_problems(raw: object, where: str) -> list[str]:
    if not isinstance(raw, dict):
        return [f"{where}: must be an object with a \"type\" (got {_json_type(raw)})"]
    op_type = raw.get("type")
    if "type" not in raw:
        return [f"{where}.type: is required; one of {', '.join(OPERATION_TYPES)}"]
    if op_type not in OPERATION_TYPES:
        return [f"{where}.type: must be one of {', '.join(OPERATION_TYPES)} (got {op_type!r})"]
    assert isinstance(op_type, str)
    problems = [f"{where}.{name}: is required for a {op_type} operation"
                for name in _REQUIRED[op_type] if name not in raw]
    for field, kind in _ALLOWED_FIELDS[op_type].items():
        if field in raw:
            problems += _field_problems(field, kind, raw[field], where)
    if problems:
        return problems
    # Rules of §Validation Rules that the JSON Schema does not express.
    for field in ("path", "cwd"):
        if field in raw and field in _ALLOWED_FIELDS[op_type]:
            why = path_problem(raw[field])
            if why:
                problems.append(f"{where}.{field}: {why} (got {raw[field][:80]!r})")
    if op_type == "message" and len(raw["content"]) > MAX_MESSAGE_CHARS:
        problems.append(f"{where}.content: must be at most {MAX_MESSAGE_CHARS} characters")
    if op_type == "createFile":
        size = _encoded_size(raw["content"], raw.get("encoding", "utf-8"))
        if size > MAX_FILE_BYTES:
            problems.append(f"{where}.content: must be at most 10 MB (got {size} bytes)")
    if op_type == "shell" and len(raw["command"]) > MAX_COMMAND_CHARS:
        problems.append(f"{where}.command: must be at most {MAX_COMMAND_CHARS} characters "
                        f"(got {len(raw['command'])})")
    return problems


def _build(raw: dict[str, Any]) -> Any:
    allowed = _ALLOWED_FIELDS[raw["type"]]
    data = {k: v for k, v in raw.items() if k == "type" or k in allowed}
    if "timeout" in data:
        data["timeout"] = int(data["timeout"])
    return _MODELS[raw["type"]].model_validate(data)


def validate_operation(raw: object, where: str = "operation") -> ValidationResult:
    """Check one decoded JSON value as an operation; never raises."""
    problems = _operation_problems(raw, where)
    if problems:
        return ValidationResult(False, error="; ".join(problems))
    assert isinstance(raw, dict)
    return ValidationResult(True, data=_build(raw))


def parse_operation(raw: object) -> Any:
    """Return the operation model for ``raw``; raise :class:`OperationValidationError`."""
    result = validate_operation(raw)
    if not result.success:
        raise OperationValidationError(result.error)
    return result.data


def envelope_problems(raw: object) -> list[str]:
    """Problems with the message around the operations (not the operations themselves)."""
    if not isinstance(raw, dict):
        return [f"message: must be a JSON object with protocolVersion and operations (got {_json_type(raw)})"]
    problems = []
    if "protocolVersion" not in raw:
        problems.append('protocolVersion: is required and must be "1.0"')
    elif raw["protocolVersion"] != PROTOCOL_VERSION:
        problems.append(f'protocolVersion: must be "1.0" (got {raw["protocolVersion"]!r})')
    if "operations" not in raw:
        problems.append("operations: is required (an array of operations)")
    elif not isinstance(raw["operations"], list):
        problems.append(f"operations: must be an array (got {_json_type(raw['operations'])})")
    return problems


def validate_operations_message(raw: object) -> ValidationResult:
    """Check a whole operations message: valid only when the envelope and every operation are."""
    problems = envelope_problems(raw)
    if not problems:
        assert isinstance(raw, dict)
        for i, op in enumerate(raw["operations"]):
            problems += _operation_problems(op, f"operations[{i}]")
    if problems:
        return ValidationResult(False, error="; ".join(problems))
    assert isinstance(raw, dict)
    ops = [_build(op) for op in raw["operations"]]
    return ValidationResult(True, data=OperationsMessage(operations=ops))


@dataclass(frozen=True)
class InvalidOperation:
    """An operation of a message that failed validation; executing it yields an error event."""

    id: str | None
    """The operation's ``id`` when it had a string one."""
    error: str
    """What is wrong, naming the field."""
    raw: Any
    """The operation as received."""


def split_operations(raw: dict[str, Any]) -> list[Any]:
    """Each operation of a message whose envelope is valid: a model, or :class:`InvalidOperation`.

    Spec §Graceful Degradation: a malformed operation is skipped with an error event while
    the others still run, so validation happens per operation here.
    """
    out: list[Any] = []
    for i, op in enumerate(raw["operations"]):
        result = validate_operation(op, f"operations[{i}]")
        if result.success:
            out.append(result.data)
        else:
            op_id = op.get("id") if isinstance(op, dict) and isinstance(op.get("id"), str) else None
            out.append(InvalidOperation(id=op_id, error=result.error or "invalid", raw=op))
    return out
