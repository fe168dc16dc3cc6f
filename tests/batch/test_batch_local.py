"""``codeloop batch`` on this machine: results, restarts, the process pool and --max-cost."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from batch_helpers import (
    CHECK,
    batch_argv,
    batch_env,
    log_kinds,
    result_lines,
    run_batch,
    simple_tasks,
    write_tasks,
)
from task_model import TaskModel

from process_tree import alive, descendants

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]


def make_repo(path: Path) -> None:
    path.mkdir()
    subprocess.run([*GIT, "init", "-q"], cwd=path, check=True)
    (path / "f.txt").write_text("v1\n")
    subprocess.run([*GIT, "add", "."], cwd=path, check=True)
    subprocess.run([*GIT, "commit", "-qm", "one"], cwd=path, check=True)
    subprocess.run([*GIT, "tag", "v1"], cwd=path, check=True)
    (path / "f.txt").write_text("v2\n")
    subprocess.run([*GIT, "commit", "-qam", "two"], cwd=path, check=True)


def test_each_finished_task_is_one_result_line_and_a_rerun_skips_them(tmp_path: Path, model: TaskModel) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "keep.txt").write_text("kept\n")
    make_repo(tmp_path / "repo")
    tasks = write_tasks(tmp_path / "tasks.jsonl", [
        {"id": "from-dir", "instruction": "dir task", "workspace": {"dir": "src"}, "check": f"{CHECK} && test -f keep.txt"},
        {"id": "from-git", "instruction": "git task", "workspace": {"git": "repo", "revision": "v1"},
         "check": f"{CHECK} && grep -q v1 f.txt"},
        {"id": "empty", "instruction": "empty task", "check": "test -f keep.txt"},
        {"id": "no-source", "instruction": "x", "workspace": {"git": "missing-repo"}},
    ])
    done = run_batch(tasks, model, "--workers", "2", "--json")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]  # stdout holds the events only
    kinds = [e["event"] for e in events]
    assert kinds[0] == "batch_started" and kinds[-1] == "batch_finished" and kinds.count("task_finished") == 4
    assert events[-1]["statuses"] == {"completed": 3, "failed": 1} and events[-1]["finished"] == 4
    lines = result_lines(tmp_path / "tasks.results.jsonl")
    by_id = {line["id"]: line for line in lines}
    failed = by_id.pop("no-source")  # a source that cannot be had is the task's failure, named
    assert failed["status"] == "failed" and "missing-repo" in failed["error"] and failed["session_log"] is None
    lines = list(by_id.values())
    assert sorted(by_id) == ["empty", "from-dir", "from-git"] and len(lines) == 3
    assert all(line["status"] == "completed" for line in lines)
    assert by_id["from-dir"]["check"]["passed"] and by_id["from-git"]["check"]["passed"]
    assert not by_id["empty"]["check"]["passed"] and by_id["empty"]["check"]["exit_code"] == 1
    for line in lines:
        # The patch is the workspace against its start: the answer only (never keep.txt or f.txt).
        assert "+++ b/answer.txt" in line["patch"] and "+solved" in line["patch"]
        assert "keep.txt" not in line["patch"] and "f.txt" not in line["patch"]
        assert line["usage"]["model_calls"] == 3 and line["usage"]["input_tokens"] == 30
        assert line["cost_usd"] > 0 and line["seconds"] > 0 and line["timing"]["session"] > 0
        assert sum(line["timing"].values()) <= line["seconds"]
        assert log_kinds(line["session_log"]).count("user_input") == 1
    assert not (Path(by_id["from-dir"]["workspace"]) / ".git").exists()  # the baseline is kept beside it
    calls = sum(model.calls.values())
    again = run_batch(tasks, model, "--workers", "2", "--json")
    assert again.returncode == 0, again.stderr
    events = [json.loads(line) for line in again.stdout.splitlines()]
    assert events[0]["finished_before"] == 4 and "task_started" not in [e["event"] for e in events]
    assert len(result_lines(tmp_path / "tasks.results.jsonl")) == 4 and sum(model.calls.values()) == calls


def _cut_midway(work: Path) -> list[str]:
    """Tasks whose input was recorded and has not ended."""
    logs = {d.name: log_kinds(next((d / "state").glob("sessions/*.jsonl"), os.devnull))
            for d in work.iterdir() if d.is_dir()} if work.is_dir() else {}
    return [name for name, kinds in logs.items() if "user_input" in kinds and "session_end" not in kinds]


def test_a_sigkilled_batch_restarted_records_every_task_exactly_once(tmp_path: Path) -> None:
    tasks = write_tasks(tmp_path / "tasks.jsonl", simple_tasks(8, prefix="k"))
    results = tmp_path / "tasks.results.jsonl"
    # Two tasks wait on the model once they hold a tool result: the kill finds them midway on any machine.
    held = frozenset({"task number 6", "task number 7"})
    with TaskModel(delay=0.05, held=held) as slow:
        batch = subprocess.Popen(batch_argv(tasks, slow, "--workers", "4", "--json"), stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, text=True, env=batch_env(tmp_path))
        assert batch.stdout is not None
        for line in batch.stdout:
            if json.loads(line)["event"] == "task_finished":
                break
        deadline = time.monotonic() + 60
        while set(slow.waiting) != held and time.monotonic() < deadline:
            time.sleep(0.02)
        assert set(slow.waiting) == held, f"the held tasks never reached the model: {slow.waiting}"
        work = tmp_path / "tasks.results.work"
        workers = descendants(batch.pid)  # the forkserver, the pool's workers, their commands
        batch.send_signal(signal.SIGKILL)
        batch.wait()
        deadline = time.monotonic() + 30
        while any(alive(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = {pid: Path(f"/proc/{pid}/cmdline").read_bytes()[:150] for pid in workers if alive(pid)}
        assert workers and not left, f"processes of the batch outlived it: {left}"
        cut = _cut_midway(work)
        assert {"k6", "k7"} <= set(cut), cut
        slow.release()
        again = subprocess.run(batch_argv(tasks, slow, "--workers", "4"), capture_output=True, text=True,
                               env=batch_env(tmp_path), timeout=120)
    assert again.returncode == 0, again.stderr
    lines = result_lines(results)
    assert sorted(line["id"] for line in lines) == sorted(f"k{i}" for i in range(8))
    assert all(line["status"] == "completed" and line["check"]["passed"] for line in lines), [
        (line["id"], line["status"], line["error"], line["check"]) for line in lines if line["status"] != "completed"]
    for line in lines:
        kinds = log_kinds(line["session_log"])
        assert kinds.count("user_input") == 1, (line["id"], kinds)  # resumed from its log, never started over
    # A task cut midway went on in the same log (a second session_start), not in a new one.
    assert all(log_kinds(line["session_log"]).count("session_start") > 1 for line in lines if line["id"] in cut)
    assert all(len(list(Path(line["session_log"]).parent.glob("*.jsonl"))) == 1 for line in lines)


def test_ctrl_c_stops_the_batch_says_how_to_resume_and_the_rerun_records_every_task_once(tmp_path: Path) -> None:
    from codeloop.cli.batch import EXIT_INTERRUPTED

    tasks = write_tasks(tmp_path / "tasks.jsonl", simple_tasks(6, prefix="i"))
    held = frozenset({"task number 4", "task number 5"})
    with TaskModel(delay=0.05, held=held) as model:
        batch = subprocess.Popen(batch_argv(tasks, model, "--workers", "3"), stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True, env=batch_env(tmp_path))
        deadline = time.monotonic() + 60
        while set(model.waiting) != held and time.monotonic() < deadline:
            time.sleep(0.02)
        assert set(model.waiting) == held, f"the held tasks never reached the model: {model.waiting}"
        workers = descendants(batch.pid)
        batch.send_signal(signal.SIGINT)  # what Ctrl-C sends
        _out, err = batch.communicate(timeout=60)
        assert batch.returncode == EXIT_INTERRUPTED, err
        assert "interrupted: run the same command again to resume" in err
        deadline = time.monotonic() + 30
        while any(alive(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [pid for pid in workers if alive(pid)], "workers outlived the interrupted batch"
        assert {"i4", "i5"} <= set(_cut_midway(tmp_path / "tasks.results.work"))
        model.release()
        again = subprocess.run(batch_argv(tasks, model, "--workers", "3"), capture_output=True, text=True,
                               env=batch_env(tmp_path), timeout=120)
    assert again.returncode == 0, again.stderr
    lines = result_lines(tmp_path / "tasks.results.jsonl")
    assert sorted(line["id"] for line in lines) == [f"i{n}" for n in range(6)]
    assert all(line["status"] == "completed" and log_kinds(line["session_log"]).count("user_input") == 1
               for line in lines)


def test_a_task_over_its_timeout_ends_as_timeout(tmp_path: Path) -> None:
    tasks = write_tasks(tmp_path / "tasks.jsonl", [{"id": "slow", "instruction": "x", "timeout": 0.5, "check": CHECK}])
    with TaskModel(delay=2.0) as slow:
        done = run_batch(tasks, slow)
    assert done.returncode == 0, done.stderr
    (line,) = result_lines(tmp_path / "tasks.results.jsonl")
    assert line["status"] == "timeout" and line["check"]["passed"] is False


def test_max_cost_is_a_total_and_a_paused_task_goes_on_with_a_higher_one(tmp_path: Path, model: TaskModel) -> None:
    tasks = write_tasks(tmp_path / "tasks.jsonl", simple_tasks(2, prefix="c"))
    results = tmp_path / "tasks.results.jsonl"
    poor = run_batch(tasks, model, "--workers", "2", "--max-cost", "0.0001")
    assert poor.returncode == 3, poor.stderr
    assert "--max-cost reached" in poor.stderr
    assert not results.exists() or result_lines(results) == []
    rich = run_batch(tasks, model, "--workers", "2", "--max-cost", "5")
    assert rich.returncode == 0, rich.stderr
    lines = result_lines(results)
    assert sorted(line["id"] for line in lines) == ["c0", "c1"]
    assert all(line["status"] == "completed" for line in lines) and sum(line["cost_usd"] for line in lines) <= 5
    paused = [line for line in lines if "budget" in log_kinds(line["session_log"])]
    assert paused and all(log_kinds(line["session_log"]).count("user_input") == 1 for line in paused)


def test_max_cost_with_a_model_without_a_price_is_refused_before_anything_runs(tmp_path: Path, model: TaskModel) -> None:
    tasks = write_tasks(tmp_path / "tasks.jsonl", simple_tasks(1, model={"model": "no-such-model-x"}))
    done = run_batch(tasks, model, "--max-cost", "1")
    assert done.returncode == 2 and "Traceback" not in done.stderr and "no-such-model-x" in done.stderr
    assert sum(model.calls.values()) == 0 or not (tmp_path / "tasks.results.jsonl").exists()


def test_the_shared_local_model_gets_a_slot_per_worker() -> None:
    from codeloop.cli.batch import shared_local_model
    from codeloop.cli.model_choice import choose_model
    from codeloop.llm.llama_server import server_argv

    choice = choose_model(None, None, None, None, {}, None, None)
    assert choice.local
    served = shared_local_model(choice, 4)
    assert served.parallel == 4
    argv = server_argv(Path("/b/llama-server"), Path("/w/m.gguf"), 1, "m", None, served.parallel)
    assert argv[argv.index("-np") + 1] == "4" and argv[argv.index("-c") + 1] == str(4 * 8192)
    one = server_argv(Path("/b/llama-server"), Path("/w/m.gguf"), 1, "m", None)
    assert one[one.index("-np") + 1] == "1" and one[one.index("-c") + 1] == "8192"


@pytest.mark.parametrize("option", [["--approval", "maybe"], ["--network", "sometimes"], ["--provider", "acme"]])
def test_bad_options_are_one_line_and_exit_2(tmp_path: Path, model: TaskModel, option: list[str]) -> None:
    tasks = write_tasks(tmp_path / "tasks.jsonl", simple_tasks(1))
    done = run_batch(tasks, model, *option)
    assert done.returncode == 2 and "Traceback" not in done.stderr and option[1] in done.stderr
    assert os.path.exists(tmp_path / "tasks.results.jsonl") is False
