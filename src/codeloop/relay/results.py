"""The outcome of one relay command and its text form (relay spec "Previous Command Results").

Every command, executed or malformed, yields one :class:`CommandResult`. The model reads
them in the next outbox as ``[OK]`` / ``[FAILED]`` lines; the user sees the same lines on
the console. Results are persisted in the session JSON (``lastResults``) and in the step
journal, so their JSON form is part of the on-disk format.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class CommandResult:
    """One line (plus optional output) of ``## Previous Command Results``."""

    command: str
    """The tag name (``RUN_COMMAND``), also for parse errors."""
    success: bool
    """``[OK]`` when true, ``[FAILED]`` otherwise."""
    summary: str
    """One line: ``Created 'src/a.py'``, ``REJECTED: Path is outside workspace: '../x'``."""
    output: str | None = None
    """Command output (already truncated), shown indented under the line; None for none."""

    def to_json(self) -> dict[str, Any]:
        """The session-file form (camelCase, like the spec's other fields)."""
        data: dict[str, Any] = {"command": self.command, "success": self.success, "summary": self.summary}
        if self.output is not None:
            data["output"] = self.output
        return data

    @classmethod
    def from_json(cls, data: object) -> CommandResult:
        """Read the session-file form; raise ``ValueError`` naming the bad field."""
        if not isinstance(data, dict):
            raise ValueError("a result must be an object")
        command, success, summary = data.get("command"), data.get("success"), data.get("summary")
        output = data.get("output")
        if not isinstance(command, str) or not isinstance(success, bool) or not isinstance(summary, str):
            raise ValueError("a result needs command (text), success (true/false) and summary (text)")
        if output is not None and not isinstance(output, str):
            raise ValueError("a result's output must be text")
        return cls(command, success, summary, output)


def format_result(result: CommandResult) -> str:
    """``[OK] NAME: summary`` and, when there is output, an ``Output:`` part.

    One-line output follows ``Output:`` on the same line (as in the spec's example);
    longer output starts on the next line and every line is indented by four spaces, so
    nothing a command prints can look like a section marker or a result line.
    """
    status = "OK" if result.success else "FAILED"
    text = f"[{status}] {result.command}: {result.summary}"
    if result.output is None:
        return text
    output = result.output.rstrip("\n")
    if not output:
        return f"{text}\n  Output: (none)"
    lines = output.split("\n")
    if len(lines) == 1:
        return f"{text}\n  Output: {lines[0]}"
    return f"{text}\n  Output:\n" + "\n".join(f"    {line}" for line in lines)

