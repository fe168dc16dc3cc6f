"""Events (loop spec §2.9): one dataclass per kind, one wire form."""

from __future__ import annotations

import json

from codeloop.agent.events import (
    EVENT_TYPES,
    EventKind,
    SessionStart,
    ToolCallEnd,
    TurnLimit,
    event_to_json,
)


def test_2_9_every_kind_has_exactly_one_event_class() -> None:
    assert set(EVENT_TYPES) == set(EventKind)
    for kind, cls in EVENT_TYPES.items():
        assert cls.kind is kind


def test_2_9_wire_form_has_kind_timestamp_session_id_data() -> None:
    ev = SessionStart(session_id="s1", timestamp=0.0, profile="openai", model="m", working_directory="/w")
    wire = event_to_json(ev)
    assert wire == {
        "kind": "session_start",
        "timestamp": "1970-01-01T00:00:00.000+00:00",
        "session_id": "s1",
        "data": {"profile": "openai", "model": "m", "working_directory": "/w"},
    }
    json.dumps(wire)


def test_2_9_tool_call_end_payload_carries_output_and_error() -> None:
    ok = ToolCallEnd(session_id="s", call_id="c", tool_name="shell", output="x" * 100_000)
    bad = ToolCallEnd(session_id="s", call_id="c", tool_name="shell", error="boom")
    assert len(event_to_json(ok)["data"]["output"]) == 100_000
    assert not ok.is_error and bad.is_error
    assert event_to_json(TurnLimit(session_id="s", round=3))["data"] == {"round": 3, "total_turns": None}
