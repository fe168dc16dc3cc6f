"""Sessions in constrained-decoding mode (issue 10), driven by the ScriptedAdapter."""

from __future__ import annotations

import pytest

from codeloop.agent import events as ev
from codeloop.agent.config import SessionConfig
from codeloop.llm.adapters.scripted import text_response
from codeloop.llm.types import Role

CALL = '{"tool": "shell", "arguments": {"command": "echo via-json"}}'


def test_constrained_decoding_setting_is_validated() -> None:
    with pytest.raises(ValueError, match="constrained_decoding must be auto, on or off, not 'yes'"):
        SessionConfig(constrained_decoding="yes")


async def test_off_by_default_sends_native_tools_and_no_schema(harness) -> None:
    h = harness("openai", [text_response("hi")])
    await h.session.submit("x")
    request = h.adapter.requests[0]
    assert request.response_format is None and request.tools
    assert not [e for e in h.events if isinstance(e, ev.WarningEvent) and e.code == "constrained_decoding"]


async def test_text_profile_in_constrained_mode_keeps_the_json_call_in_history(harness) -> None:
    h = harness("text", [text_response(CALL), text_response('{"final_answer": "printed via-json"}')],
                SessionConfig(constrained_decoding="on"))
    answer = await h.session.submit("run it")
    assert answer == "printed via-json"
    assert "via-json" in (h.of(ev.ToolCallEnd)[0].output or "")
    first = h.adapter.requests[0]
    assert first.tools is None and first.response_format is not None
    system = first.messages[0].text
    assert "# Reply format" in system and '{"tool": "shell", "arguments": {"command": <string>' in system
    assert '<tool name="TOOL_NAME">' not in system and "## shell:" not in system, "tagged syntax contradicts JSON"
    assert first.stop_sequences is None, "'</tool>' inside a JSON string must not end the reply"
    assert first.response_format.json_schema is not None
    names = [b["properties"]["tool"]["const"] for b in first.response_format.json_schema["anyOf"][:-1]]
    assert "shell" in names and "edit_file" in names
    second = h.adapter.requests[1].messages
    assert second[-2].role is Role.ASSISTANT and second[-2].text == CALL
    assert second[-1].role is Role.USER and second[-1].text.startswith('<tool_result name="shell" status="ok">')


async def test_final_answer_is_what_submit_returns_and_text_end_shows(harness) -> None:
    h = harness("anthropic", [text_response('{"final_answer": "All done."}')], SessionConfig(constrained_decoding="on"))
    assert await h.session.submit("x") == "All done."
    assert h.of(ev.AssistantTextEnd)[0].text == "All done."
    assert h.session.end_reason == "completed"
