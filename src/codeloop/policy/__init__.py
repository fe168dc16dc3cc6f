"""Command and path policy: parse shell lines, decide allow / deny / ask.

Public API::

    split_commands(line) -> list[ParsedCommand]         every command a line would run
    evaluate_command(line, ShellPolicy, NetworkPolicy) -> Decision
    judge_line(line, ShellPolicy, NetworkPolicy) -> Judgement   the decision with what was seen
    judge_env({NAME: value}, ShellPolicy, NetworkPolicy, workspace) -> Decision   env entries of a command
    evaluate_path(path, "read"|"write"|"delete", FilesystemPolicy, root=None) -> Decision
    preset("restrictive"|"standard"|"permissive") -> Policy
    is_read_only(ParsedCommand) -> bool                 READ_ONLY_COMMANDS, judged with arguments
    is_read_only_line(line) -> bool                     every command of a line is read-only
    approval_policy(mode, ApprovalStore)                the CLI's never-ask | on-risk | always-ask (never prompts)
    PendingStore / SqlitePendingStore                   the one durable store of calls waiting for an answer
"""

from codeloop.policy.approval import ToolCallRequest
from codeloop.policy.approval_modes import (
    APPROVAL_MODES,
    ApprovalRequest,
    ApprovalsFileError,
    ApprovalStore,
    approval_policy,
    is_read_only_line,
    remembering,
)
from codeloop.policy.model import (
    Action,
    Decision,
    FilesystemPolicy,
    NetworkPolicy,
    Policy,
    ShellPolicy,
    strictest,
)
from codeloop.policy.paths import evaluate_path
from codeloop.policy.pending import (
    AlreadyDecided,
    Decided,
    PendingCall,
    PendingStore,
    SqlitePendingStore,
    UnknownPendingCallError,
)
from codeloop.policy.presets import PRESET_NAMES, preset
from codeloop.policy.shell import (
    READ_ONLY_COMMANDS,
    Judgement,
    PathUse,
    evaluate_command,
    is_read_only,
    judge_env,
    judge_line,
)
from codeloop.policy.shell_parse import ParsedCommand, Redirect, ShellParseError, split_commands

__all__ = [
    "APPROVAL_MODES",
    "PRESET_NAMES",
    "READ_ONLY_COMMANDS",
    "Action",
    "AlreadyDecided",
    "ApprovalRequest",
    "ApprovalStore",
    "ApprovalsFileError",
    "Decided",
    "Decision",
    "FilesystemPolicy",
    "Judgement",
    "NetworkPolicy",
    "ParsedCommand",
    "PathUse",
    "PendingCall",
    "PendingStore",
    "Policy",
    "Redirect",
    "ShellParseError",
    "ShellPolicy",
    "SqlitePendingStore",
    "ToolCallRequest",
    "UnknownPendingCallError",
    "approval_policy",
    "evaluate_command",
    "evaluate_path",
    "is_read_only",
    "is_read_only_line",
    "judge_env",
    "judge_line",
    "preset",
    "remembering",
    "split_commands",
    "strictest",
]
