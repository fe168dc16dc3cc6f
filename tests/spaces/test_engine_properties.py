"""Property: whatever operations arrive, a run yields exactly one event per operation, in order."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codeloop.environments.local import LocalExecutionEnvironment
from codeloop.policy import preset
from codeloop.spaces.operations import events_message_to_json
from codeloop.spaces.runs import run_message

PATHS = st.sampled_from(["a.txt", "d/b.bin", "d", "../x", "/abs", "a..b", "link", ""])
TEXT = st.text(max_size=6)
OPERATION = st.one_of(
    st.fixed_dictionaries({"type": st.just("message"), "content": TEXT}),
    st.fixed_dictionaries({"type": st.just("createFile"), "path": PATHS, "content": TEXT},
                          optional={"overwrite": st.booleans(), "encoding": st.sampled_from(["utf-8", "base64"])}),
    st.fixed_dictionaries({"type": st.just("readFile"), "path": PATHS},
                          optional={"encoding": st.sampled_from(["utf-8", "base64"])}),
    st.fixed_dictionaries({"type": st.just("editFile"), "path": PATHS,
                           "edits": st.lists(st.fixed_dictionaries({"oldContent": TEXT, "newContent": TEXT}),
                                             max_size=2)}),
    st.fixed_dictionaries({"type": st.just("deleteFile"), "path": PATHS}),
    st.fixed_dictionaries({"type": st.just("shell"), "command": st.sampled_from(["true", "cat a.txt", "exit 3"])},
                          optional={"cwd": PATHS}),
    st.dictionaries(st.sampled_from(["type", "path", "content", "timeout"]), st.integers() | TEXT, max_size=3),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(OPERATION, st.booleans()), max_size=6))
async def test_one_event_per_operation_in_order(ops_and_ids: list[tuple[dict[str, Any], bool]]) -> None:
    ops = [{**op, "id": f"op{i}"} if with_id else op for i, (op, with_id) in enumerate(ops_and_ids)]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        root.mkdir()
        (root / "link").symlink_to("/etc/hostname")
        env = LocalExecutionEnvironment(root, env_policy="core-only")
        await env.initialize()
        message, _ = await run_message({"protocolVersion": "1.0", "operations": ops}, env, preset("permissive"))
        await env.cleanup()
    out = events_message_to_json(message)
    assert out["status"] == "completed"
    assert len(out["events"]) == len(ops)
    for op, event in zip(ops, out["events"], strict=True):
        assert event.get("operationId") == op.get("id")
        assert event["type"] in (op.get("type"), "error", "policyDenied")
