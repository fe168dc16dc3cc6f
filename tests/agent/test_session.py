"""The Session loop (loop spec §2, DoD §9.1, §9.3, §9.6, §9.7, §9.10, §9.11)."""

from __future__ import annotations

import asyncio
import os

import pytest

from codeloop.agent import events as ev
from codeloop.agent.config import SessionConfig
from codeloop.agent.history import SteeringTurn
from codeloop.agent.session import SessionClosedError, SessionState
from codeloop.llm.adapters.scripted import text_response, tool_call_response
from codeloop.llm.errors import AuthenticationError, ContextLengthError
from codeloop.llm.types import Request, Response, Role

from .agent_harness import calls


async def test_9_1_natural_completion_ends_the_loop_with_text_only(harness) -> None:
    h = harness("anthropic", [text_response("Nothing to do.")])
    assert await h.session.submit("hi") == "Nothing to do."
    assert h.session.state is SessionState.IDLE
    assert h.kinds() == ["session_start", "user_input", "assistant_text_start", "assistant_text_delta",
                         "assistant_text_delta", "assistant_text_end", "session_end"]
    assert h.of(ev.SessionEnd)[0].reason == "completed"


async def test_9_1_tool_round_then_completion(harness) -> None:
    h = harness("anthropic", [
        calls("anthropic", ("write_file", {"file_path": "a.txt", "content": "A"})),
        text_response("done"),
    ])
    await h.session.submit("make a.txt")
    assert (h.root / "a.txt").read_text() == "A"
    assert len(h.adapter.requests) == 2
    assert h.adapter.requests[1].messages[-1].role is Role.TOOL


async def test_9_1_round_limit_stops_the_loop(harness) -> None:
    loop = [calls("anthropic", ("shell", {"command": f"echo {i}"})) for i in range(5)]
    h = harness("anthropic", loop, SessionConfig(max_tool_rounds_per_input=3))
    await h.session.submit("go")
    assert h.of(ev.TurnLimit)[0].round == 3
    assert h.session.end_reason == "round_limit"
    assert len(h.adapter.requests) == 3 and h.session.state is SessionState.IDLE


async def test_9_1_session_turn_limit_spans_inputs(harness) -> None:
    h = harness("anthropic", [text_response("one"), calls("anthropic", ("shell", {"command": "true"})),
                              text_response("never")], SessionConfig(max_turns=3))
    await h.session.submit("first")   # user + assistant = 2 turns
    await h.session.submit("second")  # user = 3 turns: limit before the model is asked again
    assert h.of(ev.TurnLimit)[0].total_turns == 3
    assert len(h.adapter.requests) == 1


async def test_9_1_multiple_sequential_inputs_share_history(harness) -> None:
    h = harness("openai", [text_response("a"), text_response("b")])
    await h.session.submit("first")
    await h.session.submit("second")
    texts = [m.text for m in h.adapter.requests[1].messages[1:]]
    assert texts == ["first", "a", "second"]


def _comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def _group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes whose process group is ``pgid``, read from /proc."""
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(") ", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                members.append(int(entry))
    return members


async def test_9_1_abort_kills_running_command_and_closes(harness) -> None:
    # The shell traps TERM and writes a marker; its child ignores TERM, so only a SIGKILL
    # after the grace can end it: the group is gone only if abort did both, in that order.
    # (The group id is written once the trap is set: written first, under load the abort
    # could come before the shell had its trap, and TERM ended it without the marker.)
    command = ("trap 'echo TERM > marker; exit 0' TERM; (trap '' TERM; exec sleep 30) & "
               "cut -d' ' -f5 /proc/$$/stat > pgid; wait; echo late > late.txt")
    h = harness("anthropic", [calls("anthropic", ("shell", {"command": command, "timeout_ms": 60_000}))])
    task = asyncio.create_task(h.session.submit("sleep"))
    pgid_file = h.root / "pgid"
    for _ in range(500):
        if pgid_file.exists() and pgid_file.read_text().strip():
            break
        await asyncio.sleep(0.01)
    pgid = int(pgid_file.read_text())
    while not any(_comm(pid) == "sleep" for pid in _group_members(pgid)):  # the child ignores TERM now
        await asyncio.sleep(0.01)
    await h.session.abort()
    await asyncio.wait_for(task, 10)
    assert h.session.state is SessionState.CLOSED
    end = h.of(ev.SessionEnd)[-1]
    assert (end.state, end.reason) == ("closed", "aborted")
    assert h.events[-1] is end
    assert (h.root / "marker").read_text() == "TERM\n"  # TERM reached the shell before any KILL
    for _ in range(500):  # SIGKILL is delivered asynchronously; the group must then be empty
        if not _group_members(pgid):
            break
        await asyncio.sleep(0.01)
    assert _group_members(pgid) == []
    assert not (h.root / "late.txt").exists()
    with pytest.raises(SessionClosedError):
        await h.session.submit("again")


async def test_9_1_loop_detection_injects_verbatim_warning_as_steering(harness) -> None:
    same = [calls("openai", ("shell", {"command": "ls"})) for _ in range(4)]
    h = harness("openai", [*same, text_response("ok")], SessionConfig(loop_detection_window=4))
    await h.session.submit("go")
    warning = "Loop detected: the last 4 tool calls follow a repeating pattern. Try a different approach."
    assert [e.message for e in h.of(ev.LoopDetection)] == [warning]
    assert any(isinstance(t, SteeringTurn) and t.content == warning for t in h.session.history.turns)
    last = h.adapter.requests[-1].messages[-1]
    assert last.role is Role.USER and last.text == warning


async def test_9_3_unknown_tool_is_an_error_result_not_an_exception(harness) -> None:
    h = harness("anthropic", [calls("anthropic", ("frobnicate", {})), text_response("sorry")])
    await h.session.submit("x")
    end = h.of(ev.ToolCallEnd)[0]
    assert end.is_error and "frobnicate" in (end.error or "")
    result = h.adapter.requests[1].messages[-1].content[0].tool_result
    assert result.is_error and "Available tools" in result.content


async def test_9_3_invalid_arguments_are_validated_against_schema(harness) -> None:
    h = harness("anthropic", [calls("anthropic", ("read_file", {"offset": "x"})), text_response("ok")])
    await h.session.submit("x")
    result = h.adapter.requests[1].messages[-1].content[0].tool_result
    assert result.is_error and "file_path" in result.content


async def test_9_3_malformed_json_arguments_become_error_result(harness) -> None:
    h = harness("openai", [tool_call_response(("shell", '{"command": ')), text_response("ok")])
    await h.session.submit("x")
    result = h.adapter.requests[1].messages[-1].content[0].tool_result
    assert result.is_error


async def test_9_3_parallel_calls_run_concurrently_results_in_call_order(harness) -> None:
    h = harness("openai", [
        calls("openai", ("shell", {"command": "sleep 0.6; echo first"}), ("shell", {"command": "echo second"})),
        text_response("ok"),
    ])
    await h.session.submit("x")
    ends = h.of(ev.ToolCallEnd)
    assert "second" in (ends[0].output or "")  # the quick call finished first...
    tool_msgs = [m for m in h.adapter.requests[1].messages if m.role is Role.TOOL]
    assert "first" in tool_msgs[0].content[0].tool_result.content  # ...but results keep call order
    assert "second" in tool_msgs[1].content[0].tool_result.content


async def test_9_5_tool_call_end_has_full_output_model_gets_truncated(harness) -> None:
    h = harness("anthropic", [calls("anthropic", ("read_file", {"file_path": "big.txt"})), text_response("ok")])
    (h.root / "big.txt").write_text("x" * 100_000 + "\n")
    await h.session.submit("read")
    full = h.of(ev.ToolCallEnd)[0].output or ""
    assert full.count("x") == 100_000
    sent = h.adapter.requests[1].messages[-1].content[0].tool_result.content
    assert "[WARNING: Tool output was truncated." in sent and len(sent) < 60_000


async def test_9_6_steer_becomes_user_message_after_current_round(harness) -> None:
    h = harness("anthropic", [])

    def first(request: Request) -> Response:
        h.session.steer("only a /health endpoint please")
        return calls("anthropic", ("shell", {"command": "echo step"}))

    h.adapter.push(first, text_response("ok"))
    await h.session.submit("build an app")
    second = h.adapter.requests[1].messages
    assert second[-1].role is Role.USER and second[-1].text == "only a /health endpoint please"
    assert second[-2].role is Role.TOOL
    assert [e.content for e in h.of(ev.SteeringInjected)] == ["only a /health endpoint please"]


async def test_9_6_steer_while_idle_is_delivered_on_next_submit(harness) -> None:
    h = harness("anthropic", [text_response("ok")])
    h.session.steer("be brief")
    await h.session.submit("hello")
    assert [m.text for m in h.adapter.requests[0].messages[1:]] == ["hello", "be brief"]


async def test_9_6_follow_up_starts_new_cycle_after_completion(harness) -> None:
    h = harness("anthropic", [])

    def first(request: Request) -> Response:
        h.session.follow_up("now the tests")
        return text_response("code done")

    h.adapter.push(first, text_response("tests done"))
    assert await h.session.submit("write code") == "tests done"
    assert [e.content for e in h.of(ev.UserInput)] == ["write code", "now the tests"]
    assert [e.state for e in h.of(ev.SessionEnd)] == ["idle"]


async def test_9_7_reasoning_effort_passed_and_changed_mid_session(harness) -> None:
    h = harness("openai", [text_response("a"), text_response("b")], SessionConfig(reasoning_effort="low"))
    await h.session.submit("one")
    h.session.set_reasoning_effort("high")
    await h.session.submit("two")
    assert [r.reasoning_effort for r in h.adapter.requests] == ["low", "high"]
    h.session.set_reasoning_effort(None)
    with pytest.raises(ValueError):
        h.session.set_reasoning_effort("extreme")


async def test_9_10_events_async_iterator_brackets_session(harness) -> None:
    h = harness("anthropic", [text_response("hi")])
    seen: list[ev.SessionEvent] = []

    async def consume() -> None:
        async for event in h.session.events():
            seen.append(event)

    consumer = asyncio.create_task(consume())
    await asyncio.sleep(0)
    await h.session.submit("x")
    await h.session.close()
    await asyncio.wait_for(consumer, 2)
    assert isinstance(seen[0], ev.SessionStart)
    assert isinstance(seen[-1], ev.SessionEnd) and seen[-1].state == "closed"


def test_9_10_run_sync_returns_events(harness) -> None:
    h = harness("gemini", [text_response("done")])
    got = h.session.run_sync("x")
    assert got[0].kind is ev.EventKind.SESSION_START and got[-1].kind is ev.EventKind.SESSION_END
    assert h.session.state is SessionState.CLOSED


async def test_9_11_tool_error_goes_back_to_model_which_recovers(harness) -> None:
    h = harness("anthropic", [
        calls("anthropic", ("read_file", {"file_path": "missing.py"})),
        calls("anthropic", ("write_file", {"file_path": "missing.py", "content": "x = 1\n"})),
        text_response("created it"),
    ])
    await h.session.submit("x")
    first = h.adapter.requests[1].messages[-1].content[0].tool_result
    assert first.is_error
    assert (h.root / "missing.py").read_text() == "x = 1\n"


async def test_9_11_authentication_error_closes_session_at_once(harness) -> None:
    h = harness("anthropic", [AuthenticationError("invalid x-api-key", provider="anthropic", status_code=401)])
    await h.session.submit("x")
    assert h.session.state is SessionState.CLOSED
    err = h.of(ev.ErrorEvent)[0]
    assert err.fatal and err.error_type == "AuthenticationError"
    assert h.of(ev.SessionEnd)[-1].reason == "error"
    assert len(h.adapter.requests) == 1


async def test_9_11_context_length_error_warns_then_closes(harness) -> None:
    h = harness("anthropic", [ContextLengthError("prompt is too long", provider="anthropic", status_code=400)])
    await h.session.submit("x")
    assert h.of(ev.WarningEvent)[0].code == "context_length"
    assert h.session.state is SessionState.CLOSED


async def test_5_5_context_warning_at_80_percent(harness) -> None:
    h = harness("anthropic", [text_response("ok")])
    h.profile.context_window_size = 1_000
    await h.session.submit("y" * 3_600)
    (warning,) = h.of(ev.WarningEvent)
    assert warning.code == "context_usage" and warning.message.startswith("Context usage at ~")
    assert warning.message.endswith("% of context window")


async def test_2_3_question_leaves_session_awaiting_input(harness) -> None:
    h = harness("anthropic", [text_response("Which file should I edit?"), text_response("ok")])
    await h.session.submit("fix it")
    assert h.session.state is SessionState.AWAITING_INPUT
    await h.session.submit("main.py")
    assert h.session.state is SessionState.IDLE


async def test_9_5_limits_overridable_via_session_config(harness) -> None:
    h = harness("anthropic", [calls("anthropic", ("shell", {"command": "seq 1 50"})), text_response("ok")],
                SessionConfig(tool_output_limits={"shell": 100_000}, tool_line_limits={"shell": 10}))
    await h.session.submit("x")
    sent = h.adapter.requests[1].messages[-1].content[0].tool_result.content
    assert "lines omitted" in sent or "truncated" in sent
    assert h.of(ev.ToolCallEnd)[0].output.count("\n") >= 50


async def test_9_10_shell_output_streams_as_tool_call_output_delta(harness) -> None:
    h = harness("anthropic", [calls("anthropic", ("shell", {"command": "echo streamed-line"})), text_response("ok")])
    await h.session.submit("x")
    deltas = h.of(ev.ToolCallOutputDelta)
    assert deltas and "streamed-line" in "".join(d.delta for d in deltas)
    assert deltas[0].call_id == h.of(ev.ToolCallStart)[0].call_id


async def test_9_6_steering_turn_recorded_in_history(harness) -> None:
    h = harness("anthropic", [text_response("ok")])
    h.session.steer("note")
    await h.session.submit("x")
    assert any(isinstance(t, SteeringTurn) and t.content == "note" for t in h.session.history.turns)


async def test_a_session_can_continue_a_given_history_under_a_fixed_prompt(tmp_path) -> None:
    # The seams the codali builder uses: another party's messages first, its own system prompt,
    # model calls limited per input (a nudge counts), and the closing error kept.
    from codeloop.agent.guards import ACCEPT, TurnGuard, nudge
    from codeloop.agent.history import History
    from codeloop.agent.session import Session
    from codeloop.environments.local import LocalExecutionEnvironment
    from codeloop.llm.adapters.scripted import ScriptedAdapter
    from codeloop.llm.client import Client
    from codeloop.llm.types import Message
    from codeloop.profiles import create_profile

    class AlwaysNudge(TurnGuard):
        async def after_reply(self, reply, turn):  # type: ignore[no-untyped-def]
            return ACCEPT if reply.calls else nudge("go on")

    history = History()
    history.add_message(Message.user("from another role"))
    adapter = ScriptedAdapter([text_response("one"), text_response("two"), text_response("never")])
    session = Session(create_profile("openai"), LocalExecutionEnvironment(str(tmp_path)),
                      SessionConfig(max_model_calls_per_input=2, stream=False), Client({"scripted": adapter}),
                      guards=(AlwaysNudge,), history=history, system_prompt="FIXED PROMPT")
    await session.submit("do it")
    assert session.end_reason == "round_limit" and len(adapter.requests) == 2
    first = adapter.requests[0].messages
    assert first[0].text == "FIXED PROMPT" and [m.text for m in first[1:]] == ["from another role", "do it"]
    assert [m.text for m in history.messages()] == ["from another role", "do it", "one", "go on", "two", "go on"]
    assert session.error is None

    failing = Session(create_profile("openai"), LocalExecutionEnvironment(str(tmp_path)), SessionConfig(),
                      Client({"scripted": ScriptedAdapter([AuthenticationError("bad key", provider="scripted")])}))
    await failing.submit("x")
    assert isinstance(failing.error, AuthenticationError)


async def test_track_reads_off_lets_a_session_replace_a_file_it_has_not_read(harness) -> None:
    write = ("write_file", {"file_path": "a.txt", "content": "new"})
    tracked = harness("openai", [calls("openai", write), text_response("done")])
    (tracked.root / "a.txt").write_text("old")
    await tracked.session.submit("replace a.txt")
    assert (tracked.root / "a.txt").read_text() == "old"
    assert "you have not read it in this session" in tracked.of(ev.ToolCallEnd)[0].error
    untracked = harness("openai", [calls("openai", write), text_response("done")], SessionConfig(track_reads=False))
    await untracked.session.submit("replace a.txt")
    assert (untracked.root / "a.txt").read_text() == "new"
