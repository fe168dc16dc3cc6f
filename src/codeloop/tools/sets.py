"""Ready-made tool lists per provider profile (loop spec §3.3–3.6).

Profiles (``codeloop.profiles``) build their registries from these and add their own
tools (subagents, ...) on top. Each call returns fresh ``RegisteredTool`` values.
"""

from __future__ import annotations

from codeloop.tools.apply_patch import apply_patch_tool
from codeloop.tools.edit import edit_file_tool
from codeloop.tools.files import list_dir_tool, read_file_tool, read_many_files_tool, write_file_tool
from codeloop.tools.registry import RegisteredTool, ToolRegistry
from codeloop.tools.search import glob_tool, grep_tool
from codeloop.tools.shell import ANTHROPIC_SHELL_TIMEOUT_MS, OPENAI_SHELL_TIMEOUT_MS, shell_tool


def core_tools(shell_timeout_ms: int = OPENAI_SHELL_TIMEOUT_MS) -> list[RegisteredTool]:
    """The shared core of §3.3: read_file, write_file, edit_file, shell, grep, glob."""
    return [read_file_tool(), write_file_tool(), edit_file_tool(), shell_tool(shell_timeout_ms), grep_tool(), glob_tool()]


def openai_tools() -> list[RegisteredTool]:
    """codex-aligned (§3.4): apply_patch instead of edit_file; shell times out after 10 s."""
    return [
        read_file_tool(),
        apply_patch_tool(),
        write_file_tool("Write content to a file. Creates the file and parent directories if needed. "
                        "Use apply_patch to modify existing files."),
        shell_tool(OPENAI_SHELL_TIMEOUT_MS),
        grep_tool(),
        glob_tool(),
    ]


def anthropic_tools() -> list[RegisteredTool]:
    """Claude Code-aligned (§3.5): edit_file with old_string/new_string; shell 120 s."""
    return core_tools(ANTHROPIC_SHELL_TIMEOUT_MS)


def gemini_tools() -> list[RegisteredTool]:
    """gemini-cli-aligned (§3.6): core tools plus read_many_files and list_dir; shell 10 s."""
    return [*core_tools(OPENAI_SHELL_TIMEOUT_MS), read_many_files_tool(), list_dir_tool()]


def all_tools() -> list[RegisteredTool]:
    """Every built-in tool (what ``codeloop tool NAME`` can run)."""
    return [*core_tools(), apply_patch_tool(), read_many_files_tool(), list_dir_tool()]


def all_tools_registry() -> ToolRegistry:
    """A registry holding :func:`all_tools`."""
    return ToolRegistry.of(all_tools())
