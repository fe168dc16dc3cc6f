"""One way to read a model reply (issue 18): the tool calls to run and the text to keep.

A reply carries its calls in one of three ways:

- structured ``tool_calls`` (the API's own);
- calls written as text (small local models; :mod:`codeloop.agent.text_tool_calls`),
  read only when recovery is on and the reply has no structured call;
- one JSON object under constrained decoding (:mod:`codeloop.llm.constrained`): a call,
  or the final answer.

A call written as text that the output limit cut off is never run (its last argument may
be half a file): it comes back with ``parse_error`` asking the model to resend it shorter.

:class:`codeloop.agent.Session` and the codali builder both read replies here. Nothing here
raises: a malformed call becomes a ``ToolCall`` whose ``parse_error`` shows the valid form.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from codeloop.agent.text_tool_calls import Schemas, parse_text_tool_calls
from codeloop.llm.constrained import parse_constrained_reply
from codeloop.llm.types import Response, ToolCall

TEXT_CALLS = "calls written as text"
"""Note: the calls were read from the reply's text, not its structured ``tool_calls``."""
CUT_OFF = "cut-off call"
"""Note: the output limit cut the reply inside a call; its calls carry ``parse_error``."""
CONSTRAINED = "constrained reply"
"""Note: the reply was read as one constrained-decoding JSON object."""

_ENDS_COMPLETE = re.compile(r"(</[A-Za-z_][\w.-]*>|\}|```)\s*$")
"""A reply cut by the output limit still holds whole calls when it ends like this."""

_CUT = ("Your reply was cut off at the output limit{limit} before this {name} call was complete, so it was "
        "not run. Send the call again, shorter: one tool call, no other text (for a big file, write part of "
        "it and add the rest with edit_file).")


@dataclass(frozen=True)
class Reply:
    """A reply as the loop acts on it."""

    calls: tuple[ToolCall, ...]
    """Calls to run, in order; one carrying ``parse_error`` gets that text as its error result."""
    text: str
    """The assistant text to keep and show: the reply's text, or under constrained decoding
    the final answer ("" for a valid call when the history carries calls as structured parts)."""
    recovered: bool = False
    """True when ``calls`` were read from text (not the API's own): the provider's message
    cannot be kept verbatim, the history must rebuild it with these calls."""
    notes: tuple[str, ...] = ()
    """How the reply was read: :data:`TEXT_CALLS`, :data:`CUT_OFF`, :data:`CONSTRAINED`."""


@dataclass(frozen=True)
class ReplyReader:
    """Reads replies for one set of tools and one way of calling them."""

    schemas: Schemas
    """Tool name → JSON Schema of its arguments (the tools the model may call)."""
    recover: bool = True
    """Read calls written as text when the reply has no structured call."""
    constrained: bool = False
    """Every reply is one constrained JSON object: a call or ``{"final_answer": ...}``."""
    native_history: bool = True
    """The history carries calls as structured parts, so a valid constrained call needs no text."""
    output_limit: int | None = None
    """Output tokens per reply, named in the message of a cut-off call."""

    def read(self, response: Response) -> Reply:
        """The calls and text of ``response``; see the module docstring."""
        if self.constrained:
            return self._read_constrained(response)
        text = response.text
        if response.tool_calls or not text or not self.recover:
            return Reply(tuple(response.tool_calls), text)
        calls = parse_text_tool_calls(text, self.schemas).calls
        if not calls:
            return Reply((), text)
        notes: tuple[str, ...] = (TEXT_CALLS,)
        if response.finish_reason.reason == "length" and not _ENDS_COMPLETE.search(text):
            limit = f" ({self.output_limit} tokens)" if self.output_limit else ""
            calls = tuple(dataclasses.replace(c, parse_error=_CUT.format(limit=limit, name=c.name)) for c in calls)
            notes += (CUT_OFF,)
        return Reply(calls, text, True, notes)

    def _read_constrained(self, response: Response) -> Reply:
        parsed = parse_constrained_reply(response.text, self.schemas)
        if parsed.answer is not None:
            text = parsed.answer
        elif parsed.call is not None and parsed.call.parse_error is None and self.native_history:
            text = ""  # the history carries the call itself: its JSON text would only fill the window
        else:
            text = response.text  # a malformed reply stays, so the model sees what it wrote
        if response.tool_calls:
            return Reply(tuple(response.tool_calls), text)
        calls = (parsed.call,) if parsed.call is not None else ()
        return Reply(calls, text, bool(calls), (CONSTRAINED,))
