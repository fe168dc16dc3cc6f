"""Tool-call recovery (issue 10): calls written as text run as calls, bad ones teach the form."""

from __future__ import annotations

from codeloop.agent import events as ev
from codeloop.agent.config import SessionConfig
from codeloop.llm.adapters.scripted import text_response
from codeloop.llm.types import Role

from .agent_harness import calls, tagged

FENCED = 'I will run it.\n```json\n{"name": "shell", "arguments": {"command": "echo recovered"}}\n```'


async def test_recovery_runs_fenced_json_call_and_sends_structured_history(harness) -> None:
    h = harness("openai", [text_response(FENCED), text_response("done")], SessionConfig(tool_call_recovery=True))
    await h.session.submit("run it")
    assert "recovered" in (h.of(ev.ToolCallEnd)[0].output or "")
    second = h.adapter.requests[1].messages
    assistant = second[-2]
    assert assistant.role is Role.ASSISTANT
    assert [p.tool_call.name for p in assistant.content if p.tool_call] == ["shell"]
    assert second[-1].role is Role.TOOL and second[-1].tool_call_id == assistant.content[-1].tool_call.id


async def test_recovery_off_by_default_for_native_profiles(harness) -> None:
    h = harness("anthropic", [text_response(FENCED)])
    await h.session.submit("run it")
    assert h.of(ev.ToolCallStart) == [] and h.session.end_reason == "completed"


async def test_recovery_can_be_switched_off_for_text_profile(harness) -> None:
    h = harness("text", [text_response(FENCED)], SessionConfig(tool_call_recovery=False))
    await h.session.submit("run it")
    assert h.of(ev.ToolCallStart) == []


async def test_text_profile_malformed_call_gets_exact_valid_form_then_model_corrects(harness) -> None:
    bad = '<tool name="shell"><command>sleep 1</command><timeout_ms>soon</timeout_ms></tool>'
    good = '<tool name="shell"><command>echo fixed</command></tool>'
    h = harness("text", [text_response(bad), text_response(good), text_response("ok")])
    await h.session.submit("go")
    first, second = h.of(ev.ToolCallEnd)
    assert first.is_error and '<tool name="shell">\n<command>string (required)</command>' in (first.error or "")
    assert "fixed" in (second.output or "")
    sent = h.adapter.requests[1].messages[-1]
    assert sent.role is Role.USER and sent.text.startswith('<tool_result name="shell" status="error">')


async def test_text_profile_unknown_tool_lists_available_tools(harness) -> None:
    # (A run_command with a command now runs as the shell call it meant: tests/agent/test_tool_suggestions.py.)
    h = harness("text", [text_response('{"name": "frobnicate", "arguments": {"level": 3}}'), text_response("ok")])
    await h.session.submit("go")
    err = h.of(ev.ToolCallEnd)[0].error or ""
    assert err.startswith("Unknown tool: frobnicate. Available tools:") and "shell" in err


async def test_text_profile_requests_carry_no_native_tools(harness) -> None:
    h = harness("text", [text_response("hi")])
    await h.session.submit("x")
    assert h.adapter.requests[0].tools is None


async def test_text_profile_stops_generation_after_a_call(harness) -> None:
    # The server cuts the reply at the stop sequence, so the closing tag never arrives.
    h = harness("text", [text_response('<tool name="shell">\n<command>echo cut</command>\n'), text_response("ok")])
    await h.session.submit("x")
    assert h.adapter.requests[0].stop_sequences == ["</tool>", "<tool_result"]
    assert h.adapter.requests[0].temperature == 0.0  # deterministic for small local models
    assert "cut" in (h.of(ev.ToolCallEnd)[0].output or "")


async def test_text_profile_caps_each_reply_to_a_quarter_of_the_window(harness) -> None:
    h = harness("text", [text_response("hi")])
    await h.session.submit("x")
    assert h.adapter.requests[0].max_tokens == h.session.profile.context_window_size // 4 == 2048


async def test_a_call_cut_by_the_output_limit_is_not_run_and_the_model_is_told(harness, tmp_path) -> None:
    cut = '<tool name="write_file">\n<file_path>app.py</file_path>\n<content>\nprint("one")\nprint("tw'
    whole = '<tool name="write_file">\n<file_path>app.py</file_path>\n<content>\nprint("one")\n</content>\n'
    h = harness("text", [text_response(cut, finish="length"), text_response(whole), text_response("done")])
    await h.session.submit("write app.py")
    first, second = h.of(ev.ToolCallEnd)
    assert first.is_error and "cut off at the output limit (2048 tokens)" in (first.error or "")
    assert "Send the call again, shorter" in (h.adapter.requests[1].messages[-1].text)
    assert not second.is_error and (tmp_path / "app.py").read_text() == 'print("one")\n'  # never half a file


async def test_a_cut_reply_whose_call_is_complete_still_runs(harness) -> None:
    # A small model that repeats blank lines after a whole call until the limit.
    rambling = '<tool name="shell">\n<command>echo whole</command>\n' + "\n" * 40
    h = harness("text", [text_response(rambling, finish="length"), text_response("ok")])
    await h.session.submit("x")
    assert "whole" in (h.of(ev.ToolCallEnd)[0].output or "")


# Small-window sessions (the text profile) get the precise correction of the echo guard
# instead (issue 20, tests/agent/test_rescue_echo.py); the nudge below is every other session's.
ECHO = ("shell", {"command": "echo hi"})


async def test_an_empty_reply_after_a_tool_result_is_answered_with_a_nudge(harness) -> None:
    h = harness("anthropic", [calls("anthropic", ECHO), text_response(""), text_response("All done.")])
    await h.session.submit("x")
    nudges = h.of(ev.SteeringInjected)
    assert [n.content for n in nudges] == ["Your reply was empty. Continue the task: call a tool, or give your "
                                           "final answer."]
    assert h.adapter.requests[2].messages[-1].text.startswith("Your reply was empty.")
    assert h.session.last_text == "All done." and h.session.end_reason == "completed"
    small = harness("text", [text_response(tagged(*ECHO)), text_response(""), text_response("All done.")])
    await small.session.submit("x")
    (note,) = small.of(ev.SteeringInjected)
    # A command ran: the small model is asked to finish, with no template it could copy.
    assert note.content == ("Your reply was empty. If the task needs more, make the next tool call. "
                            "To finish, reply with one or two sentences saying what you did.")


async def test_empty_replies_are_nudged_at_most_twice_per_input(harness) -> None:
    h = harness("anthropic", [calls("anthropic", ECHO), text_response(""), text_response(" "), text_response("")])
    await h.session.submit("x")
    assert len(h.of(ev.SteeringInjected)) == 2 and len(h.adapter.requests) == 4
    assert h.session.end_reason == "completed"


async def test_an_empty_answer_without_tools_is_not_nudged(harness) -> None:
    h = harness("anthropic", [text_response("")])
    await h.session.submit("x")
    assert h.of(ev.SteeringInjected) == [] and len(h.adapter.requests) == 1
