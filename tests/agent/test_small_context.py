"""Small context windows (issue 10): tool outputs capped, oldest outputs shortened first."""

from __future__ import annotations

from codeloop.agent import events as ev
from codeloop.agent.history import ToolResultsTurn, UserTurn
from codeloop.llm.adapters.scripted import text_response

from .agent_harness import calls


async def test_small_window_caps_each_tool_output_at_a_quarter_of_the_window(harness) -> None:
    h = harness("text", [calls("text", ("read_file", {"file_path": "big.txt"})), text_response("ok")])
    assert h.profile.context_window_size == 8_192
    (h.root / "big.txt").write_text("y" * 40_000)
    await h.session.submit("read")
    sent = h.session.history.turns[2]
    assert isinstance(sent, ToolResultsTurn)
    assert len(sent.results[0].content) < 8_192 + 400  # 8192 characters plus the marker
    assert (h.of(ev.ToolCallEnd)[0].output or "").count("y") == 40_000


async def test_oldest_tool_outputs_are_shortened_first_never_the_task(harness) -> None:
    reads = [calls("text", ("read_file", {"file_path": f"f{i}.txt"})) for i in range(4)]
    h = harness("text", [*reads, text_response("ok")])
    for i in range(4):
        (h.root / f"f{i}.txt").write_text(str(i) * 7_000)
    task = "summarize all files " + "!" * 100
    await h.session.submit(task)
    results = [t for t in h.session.history.turns if isinstance(t, ToolResultsTurn)]
    assert "removed to fit the context window" in results[0].results[0].content
    assert results[-1].results[0].content.count("3") >= 7_000  # the latest output is whole
    # (after the workspace map that small windows get in front of the task: issue 20)
    assert isinstance(h.session.history.turns[0], UserTurn) and h.session.history.turns[0].content.endswith(task)
    warnings = [e for e in h.of(ev.WarningEvent) if e.code == "history_shortened"]
    assert warnings
    # what the model is sent matches the shortened history
    last_request = h.adapter.requests[-1].messages
    assert "removed to fit the context window" in last_request[3].text
    assert h.session.history.total_chars <= 8_192 * 4 * 0.7
