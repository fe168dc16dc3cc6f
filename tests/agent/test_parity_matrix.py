"""The cross-provider parity matrix (loop spec §9.12), every row for every profile
(openai, anthropic, gemini and text), driven by the ScriptedAdapter over a real workspace."""

from __future__ import annotations

import pytest

from codeloop.agent import events as ev
from codeloop.agent.config import SessionConfig
from codeloop.llm.adapters.scripted import text_response
from codeloop.llm.types import Request, Response

from .agent_harness import PROFILES, calls

pytestmark = pytest.mark.parametrize("profile", PROFILES)


def write(profile: str, path: str, content: str) -> tuple[str, dict]:
    return "write_file", {"file_path": path, "content": content}


def edit(profile: str, path: str, old: str, new: str) -> tuple[str, dict]:
    """The profile's native editing format."""
    if profile == "openai":
        patch = f"*** Begin Patch\n*** Update File: {path}\n@@\n-{old}\n+{new}\n*** End Patch"
        return "apply_patch", {"patch": patch}
    return "edit_file", {"file_path": path, "old_string": old, "new_string": new}


def last_results(h, index: int = -1) -> list[str]:
    """What the model was sent as the results of the previous round."""
    return h.sent_texts(index)[-1:] if h.profile.id == "text" else [
        t for t, m in zip(h.sent_texts(index), h.adapter.requests[index].messages[1:], strict=True)
        if m.role.value == "tool"
    ]


async def test_simple_file_creation(harness, profile) -> None:
    h = harness(profile, [calls(profile, write(profile, "hello.py", 'print("Hello World")\n')), text_response("done")])
    await h.session.submit("Create hello.py")
    assert (h.root / "hello.py").read_text() == 'print("Hello World")\n'


async def test_read_then_edit(harness, profile) -> None:
    h = harness(profile, [
        calls(profile, ("read_file", {"file_path": "a.py"})),
        calls(profile, edit(profile, "a.py", "x = 1", "x = 2")),
        text_response("done"),
    ])
    (h.root / "a.py").write_text("x = 1\n")
    await h.session.submit("set x to 2")
    assert "x = 1" in h.of(ev.ToolCallEnd)[0].output
    assert (h.root / "a.py").read_text() == "x = 2\n"


async def test_multi_file_edit_in_one_session(harness, profile) -> None:
    h = harness(profile, [
        calls(profile, edit(profile, "a.py", "A = 1", "A = 10")),
        calls(profile, edit(profile, "b.py", "B = 2", "B = 20")),
        text_response("done"),
    ])
    (h.root / "a.py").write_text("A = 1\n")
    (h.root / "b.py").write_text("B = 2\n")
    await h.session.submit("bump both")
    assert (h.root / "a.py").read_text() == "A = 10\n" and (h.root / "b.py").read_text() == "B = 20\n"
    assert not any(e.is_error for e in h.of(ev.ToolCallEnd))


async def test_shell_command_execution(harness, profile) -> None:
    h = harness(profile, [calls(profile, ("shell", {"command": "echo hi-from-shell"})), text_response("ok")])
    await h.session.submit("run")
    assert "hi-from-shell" in h.of(ev.ToolCallEnd)[0].output
    assert any("hi-from-shell" in t for t in last_results(h))


async def test_shell_command_timeout(harness, profile) -> None:
    h = harness(profile, [calls(profile, ("shell", {"command": "sleep 5", "timeout_ms": 300})), text_response("ok")])
    await h.session.submit("sleep")
    end = h.of(ev.ToolCallEnd)[0]
    assert end.is_error and "timed out after 300ms" in (end.error or "")
    assert any("timeout_ms" in t for t in last_results(h))


async def test_grep_and_glob_find_files(harness, profile) -> None:
    h = harness(profile, [
        calls(profile, ("glob", {"pattern": "**/*.py"})),
        calls(profile, ("grep", {"pattern": "needle"})),
        text_response("found"),
    ])
    (h.root / "pkg").mkdir()
    (h.root / "pkg" / "m.py").write_text("needle = 1\n")
    (h.root / "notes.txt").write_text("nothing\n")
    await h.session.submit("find needle")
    glob_out, grep_out = (e.output or "" for e in h.of(ev.ToolCallEnd))
    assert "pkg/m.py" in glob_out and "notes.txt" not in glob_out
    assert "pkg/m.py" in grep_out and "needle" in grep_out


async def test_multi_step_read_analyze_edit(harness, profile) -> None:
    h = harness(profile, [
        calls(profile, ("grep", {"pattern": "def add"})),
        calls(profile, ("read_file", {"file_path": "calc.py"})),
        calls(profile, edit(profile, "calc.py", "    return a - b", "    return a + b")),
        calls(profile, ("shell", {"command": "python3 -c 'import calc; print(calc.add(2, 3))'"})),
        text_response("fixed"),
    ])
    (h.root / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    await h.session.submit("fix add")
    assert h.of(ev.ToolCallEnd)[-1].output.startswith("5")


async def test_tool_output_truncation_large_file(harness, profile) -> None:
    h = harness(profile, [calls(profile, ("read_file", {"file_path": "big.txt"})), text_response("ok")])
    (h.root / "big.txt").write_text("x" * 100_000)
    await h.session.submit("read big.txt")
    assert (h.of(ev.ToolCallEnd)[0].output or "").count("x") == 100_000
    sent = last_results(h)[-1]
    assert "[WARNING: Tool output was truncated." in sent and sent.count("x") < 60_000


async def test_parallel_tool_calls(harness, profile) -> None:
    h = harness(profile, [
        calls(profile, ("shell", {"command": "echo one"}), ("shell", {"command": "echo two"})),
        text_response("ok"),
    ])
    await h.session.submit("two commands")
    outs = sorted((e.output or "").split("\n")[0] for e in h.of(ev.ToolCallEnd))
    assert outs == ["one", "two"]
    sent = "\n".join(last_results(h))
    assert sent.index("one") < sent.index("two")  # results in call order
    assert h.profile.supports_parallel_tool_calls == (profile != "text")


async def test_steering_mid_task(harness, profile) -> None:
    h = harness(profile, [])

    def first(request: Request) -> Response:
        h.session.steer("Actually, just a single /health endpoint")
        return calls(profile, write(profile, "app.py", "routes = []\n"))

    h.adapter.push(first, text_response("ok"))
    await h.session.submit("Create a Flask app with many routes")
    assert h.adapter.requests[1].messages[-1].text == "Actually, just a single /health endpoint"


async def test_reasoning_effort_change(harness, profile) -> None:
    h = harness(profile, [text_response("a"), text_response("b")], SessionConfig(reasoning_effort="medium"))
    await h.session.submit("one")
    h.session.set_reasoning_effort("high")
    await h.session.submit("two")
    expected = [None, None] if profile == "text" else ["medium", "high"]
    assert [r.reasoning_effort for r in h.adapter.requests] == expected
    assert h.session.config.reasoning_effort == "high"


async def test_subagent_spawn_and_wait(harness, profile) -> None:
    h = harness(profile, [])
    parent = iter([
        lambda: calls(profile, ("spawn_agent", {"task": "write tests.txt"})),
        lambda: calls(profile, ("wait", {"agent_id": spawned_id()})),
        lambda: text_response("reviewed"),
    ])
    child = iter([lambda: calls(profile, write(profile, "tests.txt", "ok\n")), lambda: text_response("child done")])

    def spawned_id() -> str:
        return (h.of(ev.ToolCallEnd)[0].output or "").split()[2]

    def route(request: Request) -> Response:
        # Parent and child share the adapter and run concurrently: answer by conversation.
        is_child = request.messages[1].text == "write tests.txt"
        return next(child if is_child else parent)()

    h.adapter.push(*[route] * 5)
    await h.session.submit("delegate")
    assert (h.root / "tests.txt").read_text() == "ok\n"
    wait_end = next(e for e in h.of(ev.ToolCallEnd) if e.tool_name == "wait")
    assert "completed" in (wait_end.output or "") and "child done" in (wait_end.output or "")
    child_session = next(iter(h.session.subagents.agents.values())).session
    assert child_session.history.turns[0].content == "write tests.txt"  # own history
    assert child_session.environment is h.session.environment  # shared environment
    assert "spawn_agent" not in child_session._tools()  # depth limit 1


async def test_loop_detection_triggers_warning(harness, profile) -> None:
    script = [calls(profile, ("shell", {"command": "ls"})) for _ in range(3)] + [text_response("ok")]
    h = harness(profile, script, SessionConfig(loop_detection_window=3))
    await h.session.submit("go")
    assert len(h.of(ev.LoopDetection)) == 1


async def test_error_recovery_tool_fails_model_retries(harness, profile) -> None:
    h = harness(profile, [
        calls(profile, edit(profile, "a.py", "missing line", "y")),
        calls(profile, ("read_file", {"file_path": "a.py"})),
        calls(profile, edit(profile, "a.py", "x = 1", "x = 3")),
        text_response("done"),
    ])
    (h.root / "a.py").write_text("x = 1\n")
    await h.session.submit("edit")
    errors = [e.is_error for e in h.of(ev.ToolCallEnd)]
    assert errors == [True, False, False]
    assert (h.root / "a.py").read_text() == "x = 3\n"


async def test_provider_specific_editing_format(harness, profile) -> None:
    h = harness(profile, [calls(profile, edit(profile, "m.py", "def f():", "def g():")), text_response("ok")])
    (h.root / "m.py").write_text("def f():\n    pass\n")
    await h.session.submit("rename")
    names = h.profile.tool_registry.names()
    if profile == "openai":
        assert "apply_patch" in names and "edit_file" not in names
    else:
        assert "edit_file" in names and "apply_patch" not in names
    assert (h.root / "m.py").read_text() == "def g():\n    pass\n"
