"""History compaction at 90 % of the context window (codali spec §4)."""

from __future__ import annotations

from codeloop.codali.shared_history import History
from codeloop.llm.types import ContentPart, Message, Role, ToolCallData


async def fake_summary(text: str) -> str:
    return f"summary of {text.count(chr(10) * 2) + 1} messages"


async def test_below_90_percent_nothing_changes() -> None:
    history = History(context_window_tokens=1000, keep_recent=1)
    history.add(Message.user("x" * 3500))  # 875 tokens + 2 for framing: under 900
    assert not await history.fit(fake_summary)
    assert len(history.messages()) == 1


async def test_at_90_percent_older_messages_become_one_summary() -> None:
    history = History(context_window_tokens=1000, keep_recent=2)
    for i in range(4):
        history.add(Message.user(f"{i}" * 1000))
    assert await history.fit(fake_summary)
    assert [m.text[:1] for m in history.messages()] == ["S", "2", "3"]
    assert history.messages()[0].text == "Summary of the conversation so far:\nsummary of 2 messages"
    assert history.compactions == 1


async def test_tool_results_stay_with_their_calls() -> None:
    history = History(context_window_tokens=100, keep_recent=2)
    history.add(Message.user("a" * 400))
    call = Message(Role.ASSISTANT, [ContentPart.of_tool_call(ToolCallData("c1", "read_file", {"file_path": "x"}))])
    history.add(call)
    history.add(Message.tool_result("c1", "content " * 20))
    history.add(Message.user("next"))
    await history.fit(fake_summary)
    # keep_recent=2 would start the tail at the tool result; the call and its result are
    # summarized together instead.
    assert [m.text for m in history.messages()] == [
        "Summary of the conversation so far:\nsummary of 3 messages", "next"]
