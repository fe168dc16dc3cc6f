"""A tool call spelled the way this session's model must write it (issue 20).

A small model told "Unknown tool" or "your reply is not an answer" needs the one exact form
that works, in the syntax it is reading and writing: the ``text`` profile's tags, the JSON
object of constrained decoding, or a native call (a tool name and JSON arguments).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from codeloop.agent.text_tool_calls import Schemas, filled_example
from codeloop.tools.files import READ_FILE

Style = Literal["tagged", "json", "native"]


def placeholder(param: str) -> str:
    """What an example call holds in place of parameter ``param``'s value (``FILE_PATH``)."""
    return param.upper()


@dataclass(frozen=True)
class CallForms:
    """Writes calls to the tools of ``schemas`` in one ``style``."""

    schemas: Schemas
    style: Style

    @staticmethod
    def style_of(constrained: bool, native_tool_calls: bool) -> Style:
        """The style a session reads: JSON when constrained, tags for the ``text`` profile."""
        return "json" if constrained else "native" if native_tool_calls else "tagged"

    def spell(self, name: str, arguments: Mapping[str, Any]) -> str:
        """One concrete call, exactly as the model should write it."""
        if self.style == "tagged":
            return filled_example(name, arguments)
        if self.style == "json":
            return json.dumps({"tool": name, "arguments": dict(arguments)}, ensure_ascii=False)
        return f"{name} with arguments {json.dumps(dict(arguments), ensure_ascii=False)}"

    def template(self, name: str) -> str:
        """A call to ``name`` with its required parameters as placeholders (``FILE_PATH``)."""
        required = self.schemas.get(name, {}).get("required", []) or []
        return self.spell(name, {param: placeholder(param) for param in required})

    def example(self, preferred: tuple[str, ...] = ()) -> str:
        """A template of the first of ``preferred`` this session has (else ``read_file``, else
        its first tool); "" when it has no tools."""
        for name in (*preferred, READ_FILE, *self.schemas):
            if name in self.schemas:
                return self.template(name)
        return ""
