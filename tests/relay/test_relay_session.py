"""Session files: the spec's fields, round trip, and clear errors for damaged files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codeloop.relay.results import CommandResult
from codeloop.relay.session import SessionFileError, SessionState, load_session, save_session

_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=15), inner, max_size=6),
    max_leaves=20,
)
_keys = st.sampled_from(
    ["sessionId", "task", "sequenceNumber", "isComplete", "createdAt", "updatedAt", "lastResults",
     "readFileRequests", "workspace", "summary", "protocolVersion", "policy", "heldCommand", "limits"]
)  # fmt: skip


def test_session_file_has_the_spec_fields_and_round_trips(tmp_path: Path) -> None:
    state = SessionState(
        session_id="a1b2c3d4",
        task="Create a calculator app",
        workspace="/w",
        sequence_number=3,
        last_results=(CommandResult("RUN_COMMAND", False, "Ran 'x' (exit code 1)", "boom\n"),),
        read_file_requests=("src/Calculator.cs",),
    )
    path = save_session(tmp_path, state)
    assert path == tmp_path / "a1b2c3d4.json"
    data = json.loads(path.read_text())
    for field in ("sessionId", "task", "sequenceNumber", "isComplete", "createdAt", "updatedAt",
                  "lastResults", "readFileRequests"):  # fmt: skip
        assert field in data
    assert data["readFileRequests"] == ["src/Calculator.cs"] and data["createdAt"].endswith("Z")
    assert load_session(tmp_path, "a1b2c3d4") == state


def test_damaged_session_file_error_names_file_and_field(tmp_path: Path) -> None:
    (tmp_path / "a1b2c3d4.json").write_text(json.dumps({"sessionId": "a1b2c3d4", "sequenceNumber": "three"}))
    with pytest.raises(SessionFileError, match=r"a1b2c3d4\.json is damaged \(field sequenceNumber"):
        load_session(tmp_path, "a1b2c3d4")


def test_bad_session_id_is_refused_before_touching_files(tmp_path: Path) -> None:
    with pytest.raises(SessionFileError, match="8 hex characters"):
        load_session(tmp_path, "../../etc/passwd")


@given(st.dictionaries(_keys, _json_values, max_size=13) | _json_values)
def test_any_json_gives_a_session_or_a_value_error(data: object) -> None:
    try:
        SessionState.from_json(data)
    except ValueError:
        pass


def test_a_held_command_and_the_policy_round_trip_and_are_checked(tmp_path: Path) -> None:
    from codeloop.relay.approvals import HeldCommand

    held = HeldCommand("3-2", 1, "rm -rf build", "Destructive command requires approval", "0f" * 16)
    state = SessionState(session_id="a1b2c3d4", task="t", workspace="/w", policy="standard", held=held)
    save_session(tmp_path, state)
    assert load_session(tmp_path, "a1b2c3d4") == state
    data = json.loads((tmp_path / "a1b2c3d4.json").read_text())
    data["heldCommand"]["pending"] = 7
    (tmp_path / "a1b2c3d4.json").write_text(json.dumps(data))
    with pytest.raises(SessionFileError, match=r"heldCommand\.pending is missing or has the wrong type"):
        load_session(tmp_path, "a1b2c3d4")


def test_a_command_held_before_the_approvals_store_is_asked_again(tmp_path: Path) -> None:
    """A session file written before issue 34 kept the answer itself: the held command is
    dropped, so the step applies the reply again and the policy asks through the store."""
    state = SessionState(session_id="a1b2c3d4", task="t", workspace="/w", policy="standard")
    data = state.to_json() | {"heldCommand": {"id": "3-2", "index": 1, "command": "rm -rf build",
                                              "reason": "r", "answer": None, "note": None}}
    (tmp_path / "a1b2c3d4.json").write_text(json.dumps(data))
    assert load_session(tmp_path, "a1b2c3d4").held is None
