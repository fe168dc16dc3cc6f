"""Configuration files of ``codeloop run`` (issue 9; docs/config.md).

Public API::

    load_config(workspace) -> CodeloopConfig       user + project config.toml; ConfigError

The approval modes and remembered approvals live in :mod:`codeloop.policy.approval_modes`.
"""

from codeloop.config.files import (
    SANDBOX_MODES,
    CodeloopConfig,
    ConfigError,
    McpServerConfig,
    load_config,
    parse_config,
    project_config_path,
    user_config_path,
)
from codeloop.policy.approval_modes import APPROVAL_MODES

__all__ = [
    "APPROVAL_MODES",
    "SANDBOX_MODES",
    "CodeloopConfig",
    "ConfigError",
    "McpServerConfig",
    "load_config",
    "parse_config",
    "project_config_path",
    "user_config_path",
]
