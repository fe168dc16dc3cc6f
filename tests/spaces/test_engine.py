"""Execution semantics of runs (spaces protocol §Execution Semantics, §Error Handling, §Approval Flow)."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from codeloop.environments.local import LocalExecutionEnvironment
from codeloop.policy import preset
from codeloop.spaces.engine import ApprovalMismatchError
from codeloop.spaces.operations import Approval, events_message_to_json
from codeloop.spaces.runs import MessageRejectedError, run_message

PERMISSIVE = preset("permissive")
STANDARD = preset("standard")


def _msg(*ops: dict[str, Any]) -> dict[str, Any]:
    return {"protocolVersion": "1.0", "operations": list(ops)}


async def _run(env: LocalExecutionEnvironment, *ops: dict[str, Any], policy: Any = PERMISSIVE,
               **kw: Any) -> dict[str, Any]:
    message, _ = await run_message(_msg(*ops), env, policy, **kw)
    return events_message_to_json(message)


def _root(env: LocalExecutionEnvironment) -> Path:
    return Path(env.working_directory())


async def test_one_event_per_operation_in_order_and_partial_failure_continues(local_env: LocalExecutionEnvironment) -> None:
    out = await _run(local_env,
                     {"type": "createFile", "path": "a.txt", "content": "hi"},
                     {"type": "readFile", "path": "nonexistent.txt"},
                     {"type": "shell", "command": "echo hello"})
    assert out["status"] == "completed"
    assert [e["type"] for e in out["events"]] == ["createFile", "readFile", "shell"]
    assert out["events"][1] == {**out["events"][1], "success": False, "error": "File not found"}
    assert out["events"][2]["stdout"] == "hello\n" and out["events"][2]["success"] is True
    assert out["runId"].startswith("run_")


async def test_invalid_operation_is_skipped_with_validation_error_event(local_env: LocalExecutionEnvironment) -> None:
    out = await _run(local_env,
                     {"type": "shell", "id": "bad", "command": "echo x", "timeout": 5},
                     {"type": "message", "content": "still runs"})
    err, msg = out["events"]
    assert err["type"] == "error" and err["category"] == "validation" and err["operationId"] == "bad"
    assert "operations[0].timeout" in err["message"]
    assert msg == {**msg, "type": "message", "success": True}


async def test_envelope_error_rejects_whole_message(local_env: LocalExecutionEnvironment) -> None:
    with pytest.raises(MessageRejectedError, match="protocolVersion"):
        await run_message({"operations": []}, local_env, PERMISSIVE)


async def test_create_file_bytes_written_and_parents(local_env: LocalExecutionEnvironment) -> None:
    out = await _run(local_env, {"type": "createFile", "id": "f", "path": "deep/dir/é.txt", "content": "héllo"})
    ev = out["events"][0]
    assert ev == {**ev, "operationId": "f", "success": True, "bytesWritten": 6, "path": "deep/dir/é.txt"}
    assert (_root(local_env) / "deep/dir/é.txt").read_text() == "héllo"


async def test_create_file_overwrite_semantics(local_env: LocalExecutionEnvironment) -> None:
    (_root(local_env) / "a.txt").write_text("old")
    out = await _run(local_env,
                     {"type": "createFile", "path": "a.txt", "content": "new"},
                     {"type": "createFile", "path": "a.txt", "content": "newer", "overwrite": True})
    first, second = out["events"]
    assert first["success"] is False and "already exists" in first["error"]
    assert second["success"] is True and second["bytesWritten"] == 5
    assert (_root(local_env) / "a.txt").read_text() == "newer"


async def test_base64_round_trip_of_binary_file(local_env: LocalExecutionEnvironment) -> None:
    blob = bytes(range(256))
    encoded = base64.b64encode(blob).decode()
    out = await _run(local_env,
                     {"type": "createFile", "path": "bin/x.dat", "content": encoded, "encoding": "base64"},
                     {"type": "readFile", "path": "bin/x.dat", "encoding": "base64"},
                     {"type": "readFile", "path": "bin/x.dat"})
    created, read_b64, read_utf8 = out["events"]
    assert created["bytesWritten"] == 256
    assert (read_b64["content"], read_b64["encoding"], read_b64["size"]) == (encoded, "base64", 256)
    assert read_utf8["success"] is False and "base64" in read_utf8["error"]
    assert (_root(local_env) / "bin/x.dat").read_bytes() == blob


async def test_invalid_base64_fails_the_create_and_writes_nothing(local_env: LocalExecutionEnvironment) -> None:
    out = await _run(local_env, {"type": "createFile", "path": "x", "content": "***", "encoding": "base64"})
    assert out["events"][0]["error"] == "content is not valid base64"
    assert not (_root(local_env) / "x").exists()


async def test_read_file_utf8_size_is_bytes(local_env: LocalExecutionEnvironment) -> None:
    (_root(local_env) / "c.json").write_text('{"k": "é"}')
    ev = (await _run(local_env, {"type": "readFile", "path": "c.json"}))["events"][0]
    assert (ev["content"], ev["encoding"], ev["size"]) == ('{"k": "é"}', "utf-8", 11)


async def test_edit_file_replaces_first_occurrence_only_in_order(local_env: LocalExecutionEnvironment) -> None:
    (_root(local_env) / "s.ts").write_text("x = 1\nx = 1\ny = 2\n")
    out = await _run(local_env, {"type": "editFile", "path": "s.ts", "edits": [
        {"oldContent": "x = 1", "newContent": "x = 42"},
        {"oldContent": "y = 2", "newContent": "y = 3"}]})
    ev = out["events"][0]
    assert ev["success"] is True and ev["editsApplied"] == 2
    assert (_root(local_env) / "s.ts").read_text() == "x = 42\nx = 1\ny = 3\n"


async def test_edit_file_all_or_nothing(local_env: LocalExecutionEnvironment) -> None:
    (_root(local_env) / "s.ts").write_text("a b c")
    ev = (await _run(local_env, {"type": "editFile", "path": "s.ts", "edits": [
        {"oldContent": "a", "newContent": "A"}, {"oldContent": "zzz", "newContent": "Z"}]}))["events"][0]
    assert ev["success"] is False and "edit 2 of 2" in ev["error"]
    assert (_root(local_env) / "s.ts").read_text() == "a b c"


async def test_delete_file_rules(local_env: LocalExecutionEnvironment) -> None:
    (_root(local_env) / "d").mkdir()
    (_root(local_env) / "t.txt").write_text("x")
    out = await _run(local_env, {"type": "deleteFile", "path": "t.txt"}, {"type": "deleteFile", "path": "t.txt"},
                     {"type": "deleteFile", "path": "d"})
    ok, missing, directory = out["events"]
    assert ok["success"] is True and not (_root(local_env) / "t.txt").exists()
    assert missing["error"] == "File not found"
    assert directory["success"] is False and (_root(local_env) / "d").is_dir()


async def test_symlink_escape_is_refused(local_env: LocalExecutionEnvironment, tmp_path: Path) -> None:
    (tmp_path / "secret").write_text("s3cret")
    (_root(local_env) / "link").symlink_to(tmp_path / "secret")
    ev = (await _run(local_env, {"type": "readFile", "path": "link"}))["events"][0]
    assert ev["success"] is False and "content" not in ev


async def test_shell_result_fields_cwd_and_env(local_env: LocalExecutionEnvironment) -> None:
    (_root(local_env) / "sub").mkdir()
    ev = (await _run(local_env, {"type": "shell", "command": "pwd; echo $GREETING; echo err >&2; exit 3",
                                 "cwd": "sub", "env": {"GREETING": "hi"}}))["events"][0]
    assert ev["success"] is False and ev["exitCode"] == 3
    assert ev["stdout"].splitlines() == [str(_root(local_env) / "sub"), "hi"]
    assert ev["stderr"] == "err\n" and isinstance(ev["durationMs"], int) and "timedOut" not in ev


async def test_shell_timeout_kills_and_reports(local_env: LocalExecutionEnvironment) -> None:
    ev = (await _run(local_env, {"type": "shell", "command": "sleep 30", "timeout": 1000}))["events"][0]
    assert (ev["success"], ev["timedOut"], ev["exitCode"]) == (False, True, 124)
    assert ev["durationMs"] < 10_000


async def test_shell_killed_by_sighup_is_not_reported_as_unstartable(local_env: LocalExecutionEnvironment) -> None:
    # SIGHUP makes exit code -1, which once read as "command could not be started".
    ev = (await _run(local_env, {"type": "shell", "command": "echo hi >&2; exec python3 -c 'import os,signal as s;s.signal(1,s.SIG_DFL);os.kill(0,1)'"}))["events"][0]
    assert (ev["success"], ev["exitCode"], ev["stderr"]) == (False, -1, "hi\n")
    assert "error" not in ev


async def test_shell_cwd_that_is_a_file_or_missing_is_reported_in_the_event(local_env: LocalExecutionEnvironment) -> None:
    (_root(local_env) / "f.txt").write_text("x")
    out = await _run(local_env, {"type": "shell", "command": "echo no", "cwd": "f.txt"},
                     {"type": "shell", "command": "echo no", "cwd": "nope"})
    file_cwd, missing = out["events"]
    assert (file_cwd["success"], file_cwd["error"]) == (False, "cwd 'f.txt' is not a directory")
    assert missing["success"] is False and missing["error"].startswith("cwd 'nope': ")
    assert "stdout" not in file_cwd and "stdout" not in missing


async def test_policy_timeout_caps_the_requested_one(local_env: LocalExecutionEnvironment) -> None:
    from dataclasses import replace
    capped = replace(PERMISSIVE, shell=replace(PERMISSIVE.shell, max_timeout_ms=1000))
    ev = (await _run(local_env, {"type": "shell", "command": "sleep 30", "timeout": 60_000},
                     policy=capped))["events"][0]
    assert ev["timedOut"] is True


async def test_policy_denied_continues(local_env: LocalExecutionEnvironment) -> None:
    out = await _run(local_env, {"type": "shell", "command": "sudo id"}, {"type": "shell", "command": "echo next"},
                     policy=STANDARD)
    denied, nxt = out["events"]
    assert denied["type"] == "policyDenied" and denied["operationType"] == "shell" and "sudo" in denied["reason"]
    assert nxt["stdout"] == "next\n" and out["status"] == "completed"


async def test_blocked_path_denied(local_env: LocalExecutionEnvironment) -> None:
    ev = (await _run(local_env, {"type": "createFile", "path": "conf/.env", "content": "K=v"},
                     policy=STANDARD))["events"][0]
    assert ev["type"] == "policyDenied" and ".env" in ev["reason"]
    assert not (_root(local_env) / "conf/.env").exists()


async def test_approval_pause_then_approved_runs_that_operation_once_and_continues(
        local_env: LocalExecutionEnvironment) -> None:
    (_root(local_env) / "temp").mkdir()
    (_root(local_env) / "temp/x").write_text("x")
    ops = _msg({"type": "message", "content": "cleanup"},
               {"type": "shell", "id": "cleanup-1", "command": "rm -rf temp/* && echo ran >> log.txt"},
               {"type": "shell", "id": "after", "command": "echo after"})
    paused, outcome = await run_message(ops, local_env, STANDARD, run_id="run_1")
    ev = events_message_to_json(paused)
    assert ev["status"] == "awaiting_approval"
    assert [e["type"] for e in ev["events"]] == ["message", "approvalRequired"]
    req = ev["events"][1]
    assert (req["operationId"], req["operationType"], req["details"]["command"], req["details"]["policy"]) == \
        ("cleanup-1", "shell", "rm -rf temp/* && echo ran >> log.txt", "shell.approvalRequired")
    assert (_root(local_env) / "temp/x").exists()
    resumed, _ = await run_message(ops, local_env, STANDARD, run_id="run_1", start=outcome.cursor,
                                      approval=Approval(operationId="cleanup-1", decision="approved"))
    out = events_message_to_json(resumed)
    assert out["status"] == "completed"
    assert [(e["type"], e.get("operationId")) for e in out["events"]] == [("shell", "cleanup-1"), ("shell", "after")]
    assert (_root(local_env) / "log.txt").read_text() == "ran\n"
    assert not (_root(local_env) / "temp/x").exists()


async def test_denied_approval_emits_policy_denied_and_continues(local_env: LocalExecutionEnvironment) -> None:
    ops = _msg({"type": "shell", "command": "rm -rf build"}, {"type": "shell", "command": "echo after"})
    _, outcome = await run_message(ops, local_env, STANDARD, run_id="run_2")
    assert outcome.pending_operation_id == "op-1"
    resumed, _ = await run_message(ops, local_env, STANDARD, run_id="run_2", start=outcome.cursor,
                                   approval=Approval(operationId="op-1", decision="denied", reason="no"))
    out = events_message_to_json(resumed)
    assert out["events"][0] == {**out["events"][0], "type": "policyDenied", "operationId": "op-1",
                                "reason": "denied by the user: no"}
    assert out["events"][1]["stdout"] == "after\n"


async def test_approval_for_another_operation_is_refused(local_env: LocalExecutionEnvironment) -> None:
    ops = _msg({"type": "shell", "id": "a", "command": "rm -rf build"})
    _, outcome = await run_message(ops, local_env, STANDARD)
    with pytest.raises(ApprovalMismatchError):
        await run_message(ops, local_env, STANDARD, start=outcome.cursor,
                          approval=Approval(operationId="zzz", decision="approved"))
