"""Command and path policy: parse shell lines, decide allow / deny / ask.

Public API::

    split_commands(line) -> list[ParsedCommand]         every command a line would run
    evaluate_command(line, ShellPolicy, NetworkPolicy) -> Decision
    evaluate_path(path, "read"|"write"|"delete", FilesystemPolicy) -> Decision
    preset("restrictive"|"standard"|"permissive") -> Policy
"""

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
from codeloop.policy.presets import PRESET_NAMES, preset
from codeloop.policy.shell import evaluate_command
from codeloop.policy.shell_parse import ParsedCommand, Redirect, ShellParseError, split_commands

__all__ = [
    "PRESET_NAMES",
    "Action",
    "Decision",
    "FilesystemPolicy",
    "NetworkPolicy",
    "ParsedCommand",
    "Policy",
    "Redirect",
    "ShellParseError",
    "ShellPolicy",
    "evaluate_command",
    "evaluate_path",
    "preset",
    "split_commands",
    "strictest",
]
