"""Issue 20: an edit repeated at the wrong file, whose error named the file that holds its
text, is made at that file (scripted replies, a real workspace)."""

from __future__ import annotations

from codeloop.agent import events as ev
from codeloop.llm.adapters.scripted import text_response

from .agent_harness import calls

STATS = "def last_n(values, n):\n    return values[len(values) - n + 1:]\n"
TEST = "from stats import last_n\nassert last_n([1, 2, 3], 2) == [2, 3]\n"
WRONG = ("edit_file", {"file_path": "test_stats.py", "old_string": "return values[len(values) - n + 1:]",
                       "new_string": "return values[-n:]"})


async def test_the_same_edit_sent_again_to_the_wrong_file_is_made_where_its_text_is(harness) -> None:
    # Seen with the 1.5B model (dev task 04): told where the text is, it sent the same call seven times.
    h = harness("text", [calls("text", WRONG), calls("text", WRONG), text_response("Fixed stats.py.")])
    (h.root / "stats.py").write_text(STATS)
    (h.root / "test_stats.py").write_text(TEST)
    await h.session.submit("Fix stats.py so that python3 test_stats.py passes. Do not change the test.")
    assert (h.root / "stats.py").read_text() == "def last_n(values, n):\n    return values[-n:]\n"
    assert (h.root / "test_stats.py").read_text() == TEST
    ends = h.of(ev.ToolCallEnd)
    assert [e.tool_name for e in ends][:2] == ["edit_file", "edit_file"] and ends[1].output == "Edited stats.py: 1 replacement."
    assert any("its text is in stats.py: codeloop makes it there" in w.message for w in h.of(ev.WarningEvent))


async def test_a_different_call_or_a_cloud_profile_is_left_alone(harness) -> None:
    other = ("edit_file", {**WRONG[1], "new_string": "return values[-n :]"})
    h = harness("text", [calls("text", WRONG), calls("text", other), text_response("Tried.")])
    (h.root / "stats.py").write_text(STATS)
    (h.root / "test_stats.py").write_text(TEST)
    await h.session.submit("Fix stats.py.")
    assert (h.root / "stats.py").read_text() == STATS
    h = harness("openai", [calls("openai", WRONG), calls("openai", WRONG), text_response("Tried.")])
    (h.root / "stats.py").write_text(STATS)
    (h.root / "test_stats.py").write_text(TEST)
    await h.session.submit("Fix stats.py.")
    assert (h.root / "stats.py").read_text() == STATS
