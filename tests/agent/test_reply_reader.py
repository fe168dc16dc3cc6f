"""The one reply reader (issue 18): structured calls, calls written as text, constrained
replies and cut-off calls, as Session and the codali builder act on them."""

from __future__ import annotations

import json

from codeloop.agent.reply_reader import CONSTRAINED, CUT_OFF, TEXT_CALLS, ReplyReader
from codeloop.llm.adapters.scripted import text_response, tool_call_response

SCHEMAS = {
    "shell": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
    "write_file": {"type": "object", "properties": {"file_path": {"type": "string"}, "content": {"type": "string"}},
                   "required": ["file_path", "content"]},
}
FENCED = '```json\n{"name": "shell", "arguments": {"command": "ls"}}\n```'


def test_structured_calls_are_taken_as_they_are() -> None:
    response = tool_call_response(("shell", {"command": "ls"}), text="Listing.")
    reply = ReplyReader(SCHEMAS).read(response)
    assert reply.calls == tuple(response.tool_calls) and reply.text == "Listing."
    assert not reply.recovered and reply.notes == ()


def test_calls_written_as_text_are_read_only_when_recovery_is_on() -> None:
    reply = ReplyReader(SCHEMAS).read(text_response(FENCED))
    assert [(c.name, c.arguments) for c in reply.calls] == [("shell", {"command": "ls"})]
    assert reply.recovered and reply.notes == (TEXT_CALLS,) and reply.text == FENCED
    off = ReplyReader(SCHEMAS, recover=False).read(text_response(FENCED))
    assert off.calls == () and off.text == FENCED and not off.recovered


def test_a_call_cut_by_the_output_limit_is_not_run() -> None:
    cut = '<tool name="write_file">\n<file_path>a.py</file_path>\n<content>\nprint("o'
    reply = ReplyReader(SCHEMAS, output_limit=512).read(text_response(cut, finish="length"))
    (call,) = reply.calls
    assert call.parse_error is not None and "cut off at the output limit (512 tokens)" in call.parse_error
    assert reply.notes == (TEXT_CALLS, CUT_OFF)
    # Cut after a whole call (a model repeating blank lines): the call stands.
    whole = '<tool name="shell">\n<command>ls</command>\n</tool>\n\n\n'
    assert ReplyReader(SCHEMAS).read(text_response(whole, finish="length")).calls[0].parse_error is None


def test_a_constrained_reply_is_a_call_or_the_final_answer() -> None:
    reader = ReplyReader(SCHEMAS, constrained=True)
    call = reader.read(text_response(json.dumps({"tool": "shell", "arguments": {"command": "ls"}})))
    assert [c.arguments for c in call.calls] == [{"command": "ls"}] and call.text == ""
    assert call.recovered and call.notes == (CONSTRAINED,)
    answer = reader.read(text_response(json.dumps({"final_answer": "All done."})))
    assert answer.calls == () and answer.text == "All done." and not answer.recovered


def test_a_malformed_constrained_reply_keeps_its_text_and_gets_the_valid_form() -> None:
    raw = json.dumps({"tool": "shell", "arguments": {"cmd": "ls"}})
    reply = ReplyReader(SCHEMAS, constrained=True).read(text_response(raw))
    (call,) = reply.calls
    assert call.parse_error is not None and "Reply with exactly this form" in call.parse_error
    assert reply.text == raw  # the model sees what it wrote next to the error
    # A text-history session keeps a valid call's JSON too: it is the only record of the call.
    valid = json.dumps({"tool": "shell", "arguments": {"command": "ls"}})
    assert ReplyReader(SCHEMAS, constrained=True, native_history=False).read(text_response(valid)).text == valid
