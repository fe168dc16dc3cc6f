"""Subagents (loop spec §7, DoD §9.9): send_input, close_agent, concurrency, limits."""

from __future__ import annotations

import asyncio

from codeloop.agent import events as ev
from codeloop.agent.config import SessionConfig
from codeloop.llm.adapters.scripted import text_response
from codeloop.llm.types import Request, Response

from .agent_harness import calls


def spawned_ids(h) -> list[str]:
    return [(e.output or "").split()[2] for e in h.of(ev.ToolCallEnd) if e.tool_name == "spawn_agent"]


async def test_9_9_two_children_run_concurrently_and_both_report(harness) -> None:
    h = harness("anthropic", [])
    both_started = asyncio.Event()
    started: set[str] = set()

    async def route(request: Request) -> Response:
        first_user = request.messages[1].text
        if first_user in ("task A", "task B"):  # a child: wait until both children are running
            started.add(first_user)
            if len(started) == 2:
                both_started.set()
            await asyncio.wait_for(both_started.wait(), 5)
            return text_response(f"result of {first_user}")
        n = sum(1 for m in request.messages if m.role.value == "assistant")
        if n == 0:
            return calls("anthropic", ("spawn_agent", {"task": "task A"}), ("spawn_agent", {"task": "task B"}))
        if n == 1:
            # Parallel spawns finish in any order: find each child by its task.
            by_task = {a.instruction: i for i, a in h.session.subagents.agents.items()}
            a, b = by_task["task A"], by_task["task B"]
            return calls("anthropic", ("wait", {"agent_id": a}), ("wait", {"agent_id": b}))
        return text_response("merged")

    h.adapter.push(*[route] * 5)
    await asyncio.wait_for(h.session.submit("split the work"), 10)
    parent_last = next(r for r in reversed(h.adapter.requests) if r.messages[1].text == "split the work")
    waits = [m.content[0].tool_result.content for m in parent_last.messages if m.role.value == "tool"][-2:]
    assert "result of task A" in waits[0] and "result of task B" in waits[1]  # results in call order


async def test_9_9_send_input_resumes_finished_child_and_close_agent_closes_it(harness) -> None:
    h = harness("anthropic", [])
    child_turns: list[str] = []

    def route(request: Request) -> Response:
        if request.messages[1].text == "count files":
            child_turns.append(request.messages[-1].text)
            return text_response(f"child answer {len(child_turns)}")
        n = sum(1 for m in request.messages if m.role.value == "assistant")
        agent = spawned_ids(h)[0] if n else ""
        script = [
            lambda: calls("anthropic", ("spawn_agent", {"task": "count files", "max_turns": 7})),
            lambda: calls("anthropic", ("wait", {"agent_id": agent})),
            lambda: calls("anthropic", ("send_input", {"agent_id": agent, "message": "now count dirs"})),
            lambda: calls("anthropic", ("wait", {"agent_id": agent})),
            lambda: calls("anthropic", ("close_agent", {"agent_id": agent})),
            lambda: calls("anthropic", ("send_input", {"agent_id": agent, "message": "more"})),
            lambda: text_response("done"),
        ]
        return script[n]()

    h.adapter.push(*[route] * 9)
    await h.session.submit("delegate")
    ends = {e.tool_name + str(i): e for i, e in enumerate(h.of(ev.ToolCallEnd))}
    outputs = [e.output or e.error or "" for e in ends.values()]
    assert "child answer 1" in outputs[1] and "child answer 2" in outputs[3]
    assert child_turns == ["count files", "now count dirs"]
    assert "closed" in outputs[4]
    assert "is closed" in outputs[5]
    child = next(iter(h.session.subagents.agents.values())).session
    assert child.config.max_turns == 7 and child.state.value == "closed"


async def test_9_9_unknown_agent_id_is_an_error_result(harness) -> None:
    h = harness("anthropic", [calls("anthropic", ("wait", {"agent_id": "agent_nope"})), text_response("ok")])
    await h.session.submit("x")
    end = h.of(ev.ToolCallEnd)[0]
    assert end.is_error and "No subagent with id 'agent_nope'" in (end.error or "")


async def test_9_9_default_child_turn_limit_is_50_and_depth_configurable(harness) -> None:
    h = harness("anthropic", [], SessionConfig(max_subagent_depth=2))

    def route(request: Request) -> Response:
        if request.messages[1].text == "sub":
            return text_response("ok")
        n = sum(1 for m in request.messages if m.role.value == "assistant")
        return calls("anthropic", ("spawn_agent", {"task": "sub"})) if n == 0 else text_response("done")

    h.adapter.push(*[route] * 3)
    await h.session.submit("x")
    await asyncio.sleep(0.05)
    child = next(iter(h.session.subagents.agents.values())).session
    assert child.config.max_turns == 50
    assert "spawn_agent" in child._tools()  # depth 1 < max depth 2: grandchildren allowed
