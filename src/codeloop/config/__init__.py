"""Configuration files and approvals of ``codeloop run`` (issue 9; docs/config.md).

Public API::

    load_config(workspace) -> CodeloopConfig       user + project config.toml; ConfigError
    ApprovalStore(workspace)                        .codeloop/approvals.toml: is_allowed, remember
    approval_policy(mode, store, ask) -> ToolPolicy never-ask | on-risk | always-ask
"""

from codeloop.config.approvals import ApprovalRequest, ApprovalStore, approval_policy, is_read_only
from codeloop.config.files import (
    APPROVAL_MODES,
    SANDBOX_MODES,
    CodeloopConfig,
    ConfigError,
    McpServerConfig,
    load_config,
    parse_config,
    project_config_path,
    user_config_path,
)

__all__ = [
    "APPROVAL_MODES",
    "SANDBOX_MODES",
    "ApprovalRequest",
    "ApprovalStore",
    "CodeloopConfig",
    "ConfigError",
    "McpServerConfig",
    "approval_policy",
    "is_read_only",
    "load_config",
    "parse_config",
    "project_config_path",
    "user_config_path",
]
