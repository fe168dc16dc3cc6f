"""``codeloop run`` budgets and readable compaction (issue 36), end to end: the real command
against loopback providers (usage_server.py reports a token per byte, far above a
characters/4 guess; chat_server.py for the small-window text profile)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import jsonschema
from chat_server import text_reply, tool_reply
from test_run_cli import CODELOOP, SCHEMA, isolated_env, run
from usage_server import UsageServer

VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


def anthropic(server: UsageServer, cwd: Path, *args: str, model: str = "claude-haiku-4-5",
              task: str | None = "keep working") -> subprocess.CompletedProcess[str]:
    argv = [CODELOOP, "run", *([task] if task else []), "--cwd", str(cwd), "--provider", "anthropic",
            "--profile", "anthropic", "--model", model, "--base-url", server.base_url, "--approval", "never-ask",
            "--sandbox", "full", "--json", *args]
    return subprocess.run(argv, capture_output=True, text=True, env=isolated_env(cwd, ANTHROPIC_API_KEY="test-key"),
                          timeout=120, stdin=subprocess.DEVNULL)


def events(done: subprocess.CompletedProcess[str]) -> list[dict]:
    out = [json.loads(line) for line in done.stdout.splitlines()]
    for event in out:
        VALIDATOR.validate(event)
    return out


def stops(evs: list[dict]) -> list[dict]:
    return [e["data"] for e in evs if e["kind"] == "budget" and e["data"]["limit"]]


def session_id(stderr: str) -> str:
    found = re.search(r"session (\S+)\s+\(continue: codeloop run --resume", stderr)
    assert found, stderr
    return found.group(1)


def test_max_tokens_pauses_before_the_limit_and_resume_with_more_goes_on(workspace) -> None:
    with UsageServer(output=lambda most: min(most, 2000)) as server:
        first = anthropic(server, workspace, "--max-tokens", "40000")
        assert first.returncode == 3, first.stderr
        evs = events(first)
        assert stops(evs)[0]["limit"] == "tokens" and stops(evs)[0]["used"]["tokens"] <= 40_000
        assert sum(u.input + u.output for u in server.usages) <= 40_000
        assert "paused" in first.stderr and "--max-tokens" in first.stderr
        calls = len(server.bodies)
        sid = session_id(first.stderr)
        listed = subprocess.run([CODELOOP, "sessions", "list"], capture_output=True, text=True,
                                env=isolated_env(workspace), timeout=60)
        assert f"{sid}" in listed.stdout and "paused" in listed.stdout, listed.stdout
        server.replies.append(text_reply("All done."))
        again = anthropic(server, workspace, "--resume", sid, "--max-tokens", "80000", task=None)
        assert again.returncode == 0, again.stderr
        assert len(server.bodies) == calls + 1  # went on with the paused input: no chat, no new task
        assert [e["data"]["content"] for e in events(again) if e["kind"] == "user_input"] == []
        assert sum(u.input + u.output for u in server.usages) <= 80_000
        used = [e["data"]["used"]["tokens"] for e in events(again) if e["kind"] == "budget"]
        assert used[0] > stops(evs)[0]["used"]["tokens"]  # counted on from the first run's spending


def test_max_cost_never_one_call_over(workspace) -> None:
    with UsageServer() as server:  # every reply as long as allowed: the worst case
        done = anthropic(server, workspace, "--max-cost", "0.5")
    assert done.returncode == 3, done.stderr
    billed = sum(u.input * 1.0 + u.output * 5.0 for u in server.usages) / 1e6  # haiku: $1 / $5 per million
    assert billed <= 0.5 and len(server.usages) >= 1
    assert stops(events(done))[0]["limit"] == "cost"


def test_max_cost_on_a_model_without_a_price_is_refused(workspace) -> None:
    with UsageServer() as server:
        done = anthropic(server, workspace, "--max-cost", "1", model="claude-opus-4-6")
    assert done.returncode == 2 and not server.bodies
    assert "catalog has none for 'claude-opus-4-6'" in done.stderr and "--max-tokens" in done.stderr


def test_max_time_cancels_a_slow_call(workspace) -> None:
    with UsageServer() as server:
        server.hold = 0  # the first call never answers on its own
        done = anthropic(server, workspace, "--max-time", "2s")
        assert server.held.is_set()
    assert done.returncode == 3, done.stderr
    assert stops(events(done))[0]["limit"] == "time"


def test_max_turns_is_a_budget_too_and_resumes_with_more(workspace) -> None:
    with UsageServer(output=lambda most: 50) as server:
        first = anthropic(server, workspace, "--max-turns", "3")
        assert first.returncode == 3, first.stderr
        assert stops(events(first))[0]["limit"] == "turns"
        note = server.bodies[-1]["messages"][-1]["content"][-1]["text"]
        assert "of 3 turns" in note  # the model saw what was left
        server.replies.append(text_reply("Finished."))
        again = anthropic(server, workspace, "--resume", session_id(first.stderr), "--max-turns", "8", task=None)
    assert again.returncode == 0, again.stderr


def test_budget_keys_in_the_config_file(workspace) -> None:
    (workspace / ".codeloop").mkdir()
    (workspace / ".codeloop" / "config.toml").write_text('max_time = "soon"\n')
    done = run(["hi", "--base-url", "http://127.0.0.1:9/v1"], workspace)
    assert done.returncode == 2 and 'max_time must be a duration such as "90s"' in done.stderr
    (workspace / ".codeloop" / "config.toml").write_text("max_tokens = 30000\n")
    with UsageServer() as server:
        done = anthropic(server, workspace)
    assert done.returncode == 3 and stops(events(done))[0]["limit"] == "tokens"


def test_compaction_is_visible_and_the_agent_reads_a_dropped_output_back(server, workspace) -> None:
    """A small window (the text profile): old outputs are replaced, a context_compacted event
    says which, recall_output brings one back, and the task and system prompt stay."""
    for i in range(4):
        (workspace / f"f{i}.txt").write_text(f"{i}" * 7_000)
    (workspace / "AGENTS.md").write_text("Always answer in English. RULE-MARKER-77\n")

    def tagged(name: str, args: dict) -> dict:
        params = "".join(f"<{k}>{v}</{k}>" for k, v in args.items())
        return text_reply(f'<tool name="{name}">{params}</tool>')

    server.replies.extend(tagged("read_file", {"file_path": f"f{i}.txt"}) for i in range(4))
    done = run(["summarize the files TASK-MARKER-42", "--json", "--base-url", server.base_url, "--approval",
                "never-ask", "--sandbox", "full"], workspace)
    assert done.returncode == 0, done.stderr
    evs = [json.loads(line) for line in done.stdout.splitlines()]
    compacted = [e["data"] for e in evs if e["kind"] == "context_compacted"]
    assert compacted and compacted[0]["tokens_after"] < compacted[0]["tokens_before"]
    first = compacted[0]["dropped"][0]
    assert first["tool_name"] == "read_file" and first["chars"] >= 7_000
    # The request after compaction: the note names the call, the task and AGENTS.md are whole.
    later = json.dumps(server.requests[-1]["messages"])
    assert f"recall_output(call_id='{first['call_id']}')" in later
    assert "TASK-MARKER-42" in later and "RULE-MARKER-77" in later
    assert "## recall_output" in server.requests[-1]["messages"][0]["content"]  # offered once needed

    # Resumed, the agent reads the dropped output back through the tool made for it.
    sid = session_id(done.stderr)
    server.replies.extend([tagged("recall_output", {"call_id": first["call_id"]}), text_reply("Read it back.")])
    shown = subprocess.run([CODELOOP, "sessions", "show", sid], capture_output=True, text=True,
                           env=isolated_env(workspace), timeout=60)
    assert "context compacted: " in shown.stdout
    again = run(["read the first file's output back", "--resume", sid, "--json", "--base-url", server.base_url,
                 "--approval", "never-ask", "--sandbox", "full"], workspace)
    assert again.returncode == 0, again.stderr
    ends = [e["data"] for e in map(json.loads, again.stdout.splitlines()) if e["kind"] == "tool_call_end"]
    assert ends and ends[0]["tool_name"] == "recall_output" and "0" * 7_000 in (ends[0]["output"] or ""), ends


def test_context_in_a_chat_shows_the_window_use_by_part(server, workspace) -> None:
    (workspace / "AGENTS.md").write_text("Rules of this project. " * 40)
    (workspace / "big.txt").write_text("z" * 4_000)
    server.replies.extend([tool_reply("read_file", {"file_path": "big.txt"}), text_reply("Read it.")])
    done = subprocess.run([CODELOOP, "run", "--cwd", str(workspace), "--base-url", server.base_url, "--profile",
                           "anthropic", "--approval", "never-ask", "--sandbox", "full"],
                          input="read big.txt\n/context\n/exit\n", capture_output=True, text=True,
                          env=isolated_env(workspace), timeout=60)
    assert done.returncode == 0, done.stderr
    lines = {line.split("~")[0].strip(): line for line in done.stderr.splitlines() if line.startswith("  ")}
    tokens = {name: int(line.split("~")[1].split()[0].replace(",", "")) for name, line in lines.items()
              if "~" in line}
    assert {"system prompt", "project docs", "tools", "conversation", "files read"} <= set(tokens)
    assert tokens["files read"] >= 1_000 and tokens["project docs"] >= 200 and tokens["tools"] > 0
    assert len(server.requests) == 2  # /context is no message to the model


def test_codali_run_roles_spend_from_one_budget(workspace) -> None:
    (workspace / "app.py").write_text("print('hi')\n")
    base = [CODELOOP, "codali", "run", "--task", "say hello", "--repo", str(workspace), "--provider",
            "openai_compatible", "--json"]
    with UsageServer(output=lambda most: min(most, 300)) as server:
        server.reply_for = lambda body: text_reply("Nothing to ask.")
        done = subprocess.run([*base, "--base-url", server.base_url + "/v1", "--model", "qwen2.5-coder-1.5b-instruct",
                               "--max-tokens", "12000", "--max-rounds", "5"], capture_output=True, text=True,
                              env=isolated_env(workspace), timeout=120)
        refused = subprocess.run([*base, "--base-url", server.base_url + "/v1", "--model", "some-local-model",
                                  "--max-cost", "1"], capture_output=True, text=True, env=isolated_env(workspace),
                                 timeout=120)
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert lines[-1]["data"]["status"] == "BUDGET" and done.returncode == 1
    assert any(line["kind"] == "budget" and line["data"]["limit"] == "tokens" for line in lines)
    assert sum(u.input + u.output for u in server.usages) <= 12_000
    assert refused.returncode != 0 and "catalog has none for 'some-local-model'" in refused.stderr
