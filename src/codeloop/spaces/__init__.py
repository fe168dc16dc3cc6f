"""Spaces: the JSON operations/events runtime with policy, approval and an HTTP API.

Public API::

    validate_operation, parse_operation, validate_operations_message   (protocol)
    run_message(raw, env, policy, ...) -> (EventsMessage, RunOutcome)  (local execution)
    build_policy(config) -> Policy                                      (preset + overrides)
    SpacesClient, AsyncSpacesClient                                     (HTTP client)
    create_app(store, ...), open_store(database, data_dir)              (HTTP service)
"""

from codeloop.spaces.operations import (
    Approval,
    EventsMessage,
    OperationsMessage,
    OperationValidationError,
    ValidationResult,
    parse_operation,
    validate_operation,
    validate_operations_message,
)
from codeloop.spaces.policy_config import PolicyConfigError, build_policy
from codeloop.spaces.runs import MessageRejectedError, run_message

__all__ = [
    "Approval", "EventsMessage", "MessageRejectedError", "OperationValidationError", "OperationsMessage",
    "PolicyConfigError", "ValidationResult", "build_policy", "parse_operation", "run_message",
    "validate_operation", "validate_operations_message",
]
