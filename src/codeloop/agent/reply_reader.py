"""One way to read a model reply (issue 18): the tool calls to run and the text to keep.

Calls come as structured ``tool_calls``; as text (small local models, :mod:`.text_tool_calls`),
read when recovery is on and there is no structured call; or, under constrained decoding
(:mod:`codeloop.llm.constrained`), as one JSON object holding a call or the final answer. A
text call cut off by the output limit never runs (its last argument may be half a file): it
gets a ``parse_error`` asking for it again, shorter. Used by the Session and the codali
builder; never raises (a malformed call carries a ``parse_error`` showing the valid form).
``lenient`` reading (small models, issue 20) drops empty optional arguments; what needs the
workspace (a tool named like a file, a named fenced block) is :mod:`.reply_rescue`'s.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from codeloop.agent.text_tool_calls import Schemas, parse_text_tool_calls
from codeloop.llm.constrained import parse_constrained_reply
from codeloop.llm.types import Response, ToolCall
from codeloop.tools.arguments import drop_empty_optionals

TEXT_CALLS, CUT_OFF, CONSTRAINED = "calls written as text", "cut-off call", "constrained reply"
"""The notes of a :class:`Reply`: how it was read."""

_ENDS_COMPLETE = re.compile(r"(</[A-Za-z_][\w.-]*>|\}|```)\s*$")
"""A reply cut by the output limit still holds whole calls when it ends like this."""

_CUT = ("Your reply was cut off at the output limit{limit} before this {name} call was complete, so it was "
        "not run. Send the call again, shorter: one tool call, no other text (for a big file, write part of "
        "it and add the rest with edit_file).")


@dataclass(frozen=True)
class Reply:
    """A reply as the loop acts on it."""

    calls: tuple[ToolCall, ...]
    """Calls to run, in order; one with ``parse_error`` gets that text as its error result."""
    text: str
    """The assistant text to keep: the reply's, or under constrained decoding the final answer
    ("" for a valid call when the history carries calls as structured parts)."""
    recovered: bool = False
    """``calls`` were read from the text: the history must rebuild the provider's message."""
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class ReplyReader:
    """Reads replies for one set of tools (``schemas``: name → JSON Schema of the arguments)."""

    schemas: Schemas
    recover: bool = True
    """Read calls written as text when the reply has no structured call."""
    constrained: bool = False
    native_history: bool = True
    """The history carries calls as structured parts (a valid constrained call needs no text)."""
    output_limit: int | None = None
    """Output tokens per reply, named in the message of a cut-off call."""
    lenient: bool = False
    """Small-model reading (issue 20): an optional argument given an empty value counts as
    absent (:func:`codeloop.tools.arguments.drop_empty_optionals`), however the call came."""

    def read(self, response: Response) -> Reply:
        reply = self._read(response)
        if not self.lenient or not reply.calls:
            return reply
        return dataclasses.replace(reply, calls=tuple(map(self._meant, reply.calls)))

    def _meant(self, call: ToolCall) -> ToolCall:
        schema = self.schemas.get(call.name)
        if call.parse_error is not None or schema is None:
            return call
        arguments = drop_empty_optionals(schema, call.arguments)
        return call if arguments == call.arguments else dataclasses.replace(call, arguments=arguments)

    def _read(self, response: Response) -> Reply:
        text, given = response.text, tuple(response.tool_calls)  # both are computed on each access
        if self.constrained:
            parsed = parse_constrained_reply(text, self.schemas, drop_empty_optionals if self.lenient else None)
            if parsed.answer is not None:
                text = parsed.answer
            elif parsed.call is not None and parsed.call.parse_error is None and self.native_history:
                text = ""  # the history carries the call itself: its JSON would only fill the window
            if given:
                return Reply(given, text)
            call = () if parsed.call is None else (parsed.call,)
            return Reply(call, text, bool(call), (CONSTRAINED,))
        if given or not text or not self.recover:
            return Reply(given, text)
        calls = parse_text_tool_calls(text, self.schemas, lenient=self.lenient)
        if not calls:
            return Reply((), text)
        if response.finish_reason.reason == "length" and not _ENDS_COMPLETE.search(text):
            limit = f" ({self.output_limit} tokens)" if self.output_limit else ""
            cut = tuple(dataclasses.replace(c, parse_error=_CUT.format(limit=limit, name=c.name)) for c in calls)
            return Reply(cut, text, True, (TEXT_CALLS, CUT_OFF))
        return Reply(calls, text, True, (TEXT_CALLS,))
