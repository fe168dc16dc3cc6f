"""A temporary workspace with a real ``LocalExecutionEnvironment`` and every built-in tool."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from codeloop.environments.local import LocalExecutionEnvironment
from codeloop.tools import ToolCallOutcome, execute_tool_call
from codeloop.tools.sets import all_tools_registry


class Workspace:
    """A temporary workspace plus a way to call any built-in tool in it."""

    def __init__(self, root: Path, env: LocalExecutionEnvironment) -> None:
        self.root = root
        self.env = env
        self.registry = all_tools_registry()

    async def call(self, name: str, args: dict[str, Any] | str) -> ToolCallOutcome:
        return await execute_tool_call(self.registry, name, args, self.env)

    def write(self, relative: str, content: str | bytes) -> Path:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            path.write_bytes(content.encode("utf-8"))
        else:
            path.write_bytes(content)
        return path

    def read(self, relative: str) -> bytes:
        return (self.root / relative).read_bytes()
