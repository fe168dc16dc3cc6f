"""Wire models of the events a run produces (spaces protocol §Event Types, §Error Handling).

The events message is what the runtime answers; ``event_to_json`` gives the wire form (unset
optional fields left out). Split from :mod:`codeloop.spaces.operations` (operations and their
validation), which re-exports these names.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

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
