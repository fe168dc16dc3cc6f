"""The local-model task set is honest: each check fails on the untouched workspace and
passes after the reference solution (issue 10 "How it is measured"), and half of it is held
out from tuning (issue 20)."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from codeloop.environments.sandbox import probe_bwrap

REPO = Path(__file__).resolve().parents[2]
BENCHMARKS = REPO / "benchmarks"
TASKS = BENCHMARKS / "tasks"
TASK_DIRS = sorted(p for p in TASKS.iterdir() if (p / "task.txt").exists())
CODELOOP = Path(sys.executable).with_name("codeloop")


def test_there_are_at_least_forty_tasks() -> None:
    assert len(TASK_DIRS) >= 40


def test_every_task_is_in_exactly_one_split_and_at_least_half_are_held_out() -> None:
    split = json.loads((TASKS / "split.json").read_text())
    assert sorted(split) == ["dev", "heldout"]
    dev, heldout = split["dev"], split["heldout"]
    names = [p.name for p in TASK_DIRS]
    assert sorted(dev + heldout) == names  # no task missing, none twice, no stale name
    assert len(heldout) >= len(names) / 2


@pytest.mark.parametrize("task_dir", TASK_DIRS, ids=[p.name for p in TASK_DIRS])
def test_check_fails_before_and_passes_after_the_reference_solution(task_dir: Path, tmp_path: Path) -> None:
    work = tmp_path / "ws"
    shutil.copytree(task_dir / "setup", work)
    check = ["bash", str(task_dir / "check.sh")]
    before = sorted(task_dir.rglob("*"))
    assert subprocess.run(check, cwd=work, capture_output=True).returncode != 0, "check passes unsolved"
    subprocess.run(["bash", str(task_dir / "solution.sh")], cwd=work, check=True, capture_output=True)
    assert subprocess.run(check, cwd=work, capture_output=True).returncode == 0, "reference solution fails"
    assert (task_dir / "task.txt").read_text().strip()
    assert sorted(task_dir.rglob("*")) == before, "the check wrote into its task folder"
    assert not list((task_dir / "setup").rglob("hidden")), "what the check hides must not be in setup/"


def _runner():  # benchmarks/ is not a package: load the script as a module
    import importlib.util

    spec = importlib.util.spec_from_file_location("run_tasks", TASKS.parent / "run_tasks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["run_tasks"] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_runner_scores_an_agent_command_in_the_same_workspace_path_every_run(tmp_path: Path) -> None:
    run_tasks = _runner()
    run_tasks.WORK_ROOT = tmp_path / "work"
    task_dir = TASKS / "01_create_script"
    log = tmp_path / "paths.txt"
    solve = f"pwd >> {log} && bash {task_dir / 'solution.sh'}"
    solved = run_tasks.run_one("ref", solve, task_dir, "http://127.0.0.1:1/v1", "m", 60)
    assert solved.solved and solved.note == ""
    idle = run_tasks.run_one("idle", f"pwd >> {log}", task_dir, "http://127.0.0.1:1/v1", "m", 60)
    assert not idle.solved
    first, second = log.read_text().split()
    assert first == second == str(tmp_path / "work" / "01_create_script")  # the path is in the agent's prompt
    stuck = run_tasks.run_one("stuck", "sleep 30", task_dir, "http://127.0.0.1:1/v1", "m", 1)
    assert not stuck.solved and stuck.note == "timed out after 1s"


def test_results_table_counts_each_agent_and_marks_each_task() -> None:
    run_tasks = _runner()
    outcomes = [run_tasks.Outcome("a", "t1", True, 10.0, ""), run_tasks.Outcome("a", "t2", False, 20.0, "x"),
                run_tasks.Outcome("b", "t1", False, 3.0, ""), run_tasks.Outcome("b", "t2", False, 5.0, "")]
    table = run_tasks.results_table(["a", "b"], ["t1", "t2"], outcomes)
    assert table.splitlines() == [
        "| agent | solved | mean time per task |", "|---|---|---|",
        "| a | 1/2 | 15.0 s |", "| b | 0/2 | 4.0 s |", "",
        "| task | a | b |", "|---|---|---|",
        "| t1 | ✔ 10 s | ✘ 3 s |", "| t2 | ✘ 20 s | ✘ 5 s |",
    ]
    assert "| a | 1/2 (50.0 %) | 15.0 s |" in run_tasks.results_table(["a", "b"], ["t1", "t2"], outcomes, percent=True)

def test_runner_split_picks_one_half_or_all() -> None:
    run_tasks = _runner()
    split = json.loads((TASKS / "split.json").read_text())
    assert [p.name for p in run_tasks.select_tasks("dev")] == sorted(split["dev"])
    assert [p.name for p in run_tasks.select_tasks("heldout")] == sorted(split["heldout"])
    assert run_tasks.select_tasks() == run_tasks.select_tasks("all") == TASK_DIRS


# Names of files, folders and options a task text mentions: what a rewording must keep.
_NAMED = re.compile(r"[\w/*-]*\.[A-Za-z]+\b|\b\w+/(?!\w)|--\w+")


def test_the_reworded_split_is_the_dev_half_with_each_instruction_in_other_words() -> None:
    """Issue 33: every dev task has a reworded instruction naming the same files and options,
    and ``--split reworded`` runs the dev tasks (their setup and check) with it."""
    run_tasks = _runner()
    dev = json.loads((TASKS / "split.json").read_text())["dev"]
    reworded = sorted(p.name for p in (BENCHMARKS / "tasks_reworded").iterdir() if p.is_dir())
    assert reworded == sorted(dev)
    assert run_tasks.select_tasks("reworded") == run_tasks.select_tasks("dev")
    for task_dir in run_tasks.select_tasks("reworded"):
        original = (task_dir / "task.txt").read_text()
        text = run_tasks.instruction_file(task_dir, "reworded").read_text()
        assert text.strip() and text != original, task_dir.name
        assert set(_NAMED.findall(text)) == set(_NAMED.findall(original)), task_dir.name
        assert run_tasks.instruction_file(task_dir, "dev") == task_dir / "task.txt"


def test_the_runner_gives_the_agent_the_instruction_of_its_split(tmp_path: Path) -> None:
    run_tasks = _runner()
    run_tasks.WORK_ROOT = tmp_path / "work"
    task_dir = TASKS / "10_delete_file"
    seen = tmp_path / "seen.txt"
    for split in ("dev", "reworded"):
        outcome = run_tasks.run_one("echo", f"printf '%s' {{task}} > {seen}", task_dir, "http://127.0.0.1:1/v1",
                                    "m", 60, run_tasks.instruction_file(task_dir, split))
        assert not outcome.solved and outcome.note == ""
        assert seen.read_text() == run_tasks.instruction_file(task_dir, split).read_text().strip()
    assert seen.read_text() == (BENCHMARKS / "tasks_reworded" / "10_delete_file" / "task.txt").read_text().strip()


# -- the agent cannot read the checks (issue 20) -------------------------------------------------


def _secrets() -> dict[Path, str]:
    """Every file of every task that the agent must not read: all but ``setup/`` and ``task.txt``."""
    return {p: p.read_text() for t in TASK_DIRS for p in sorted(t.rglob("*"))
            if p.is_file() and p.name != "task.txt" and "setup" not in p.relative_to(t).parts}


def test_the_agents_environment_drops_what_would_mount_the_tasks(tmp_path: Path) -> None:
    """``python -m venv .`` in the repository puts ``<repo>/bin`` on ``PATH`` and sets
    ``VIRTUAL_ENV=<repo>``: the sandbox would mount the whole repository; ``benchmarks/`` on
    ``PATH`` (to call run_tasks.py by name) would mount the tasks."""
    run_tasks = _runner()
    hidden = run_tasks.hidden_paths()
    assert str(TASKS) in hidden
    if (REPO / ".git").exists():  # a checkout, not an unpacked archive: its objects hold the checks too
        assert any(h.endswith(".git") for h in hidden)
    path = os.environ["PATH"]
    for alone, mount in (({"VIRTUAL_ENV": str(REPO)}, REPO), ({"PATH": f"{REPO}/bin:{path}"}, REPO),
                         ({"PATH": f"{BENCHMARKS}:{path}"}, BENCHMARKS)):
        assert str(mount) in {m for _, m in run_tasks.exposure(hidden, {**os.environ, **alone}, tmp_path)}, alone
    environ = {**os.environ, "VIRTUAL_ENV": str(REPO), "PATH": f"{REPO}/bin:{BENCHMARKS}:{path}"}
    env = run_tasks.agent_env(environ, tmp_path, hidden)
    assert "VIRTUAL_ENV" not in env and not {f"{REPO}/bin", str(BENCHMARKS)} & set(env["PATH"].split(":"))
    assert run_tasks.exposure(hidden, env, tmp_path) == []
    assert "/usr/bin" in env["PATH"].split(":")  # the rest of PATH stays


def test_the_runner_refuses_to_start_when_the_tasks_would_still_be_visible(monkeypatch: pytest.MonkeyPatch) -> None:
    """No environment can hide the tasks from a workspace inside them (TMPDIR in the
    repository); the same holds for a repository under /usr. Nothing starts."""
    run_tasks = _runner()
    run_tasks.WORK_ROOT = TASKS / "work"

    def start_server(model: str) -> str:
        raise AssertionError("the model server was started")
    monkeypatch.setattr(run_tasks, "local_base_url", start_server)
    monkeypatch.setattr(sys, "argv", ["run_tasks.py", "--only", "01", "--agent-cmd", "true"])
    with pytest.raises(SystemExit, match=r"the tasks' checks at .* would be visible to the agent's sandbox"):
        run_tasks.main()
    assert not (TASKS / "work").exists()


def _shell(command: str, sandbox: str) -> str:
    """A run_tasks template whose "agent" runs ``command`` with the real ``codeloop tool shell``."""
    args = json.dumps({"command": command, "timeout_ms": 120_000}).replace("{", "{{").replace("}", "}}")
    return (f"{shlex.quote(str(CODELOOP))} tool shell --json --approval never-ask --sandbox {sandbox} --cwd {{workdir}} "
            f"--args {shlex.quote(args)}")


def _look_for_the_checks(task_dir: Path, workdir: Path) -> str:
    """``cat``/``ls`` of the task's check.sh, solution.sh and hidden/ by absolute and by
    ``../`` path, ``git show`` of them, and a ``find /`` for its check.sh deep enough to reach it,
    printing the task's own path and at most 20 others (other checkouts on the machine would fill
    the control's output and, cut at 20 lines, hide this one: a landing failed on that)."""
    files = [task_dir / "check.sh", task_dir / "solution.sh", *sorted((task_dir / "hidden").iterdir())]
    dirs = [task_dir, task_dir / "hidden"]
    relative = [os.path.relpath(p, workdir) for p in files + dirs]
    in_git = (task_dir / "hidden" / "check.py").relative_to(REPO)
    depth = len((task_dir / "check.sh").parts) - 1
    return "; ".join([
        "ls", *(f"cat {p}" for p in files), f"ls -la {' '.join(map(str, dirs))}",
        *(f"cat {p}" for p in relative[:len(files)]), f"ls -la .. {' '.join(relative[len(files):])}",
        f"git -C {REPO} show HEAD:{in_git}",
        f"find / -maxdepth {depth} \\( -path /proc -o -path /sys -o -path /dev \\) -prune -o -name check.sh "
        f"-path '*/{task_dir.name}/*' -print 2>/dev/null | awk -v me={task_dir}/check.sh '$0 == me || n++ < 20'",
    ])


def test_the_agent_cannot_read_the_tasks_checks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run of the codeloop preset's sandbox whose "agent" is the real ``codeloop tool shell
    --sandbox workspace-write``, in a workspace made by ``run_one`` with the environment it gives
    the agent (from one with the virtualenv activated and ``benchmarks/`` on ``PATH``), looking
    for the task's checks where they are. Then two controls that do see them: the same without
    the sandbox, and the same sandbox with the environment as it was (``benchmarks/`` mounted)."""
    reason = probe_bwrap()
    if reason is not None:
        pytest.skip(f"needs bubblewrap ({reason}); scripts/system-deps installs it")
    run_tasks = _runner()
    run_tasks.WORK_ROOT = tmp_path / "codeloop-tasks"  # not the real one: a benchmark may be running
    venv = os.path.realpath(sys.prefix)
    monkeypatch.setenv("VIRTUAL_ENV", venv)
    monkeypatch.setenv("PATH", f"{venv}/bin:{BENCHMARKS}:{os.environ['PATH']}")
    task_dir = TASKS / "36_csv_column_sum"
    look = _look_for_the_checks(task_dir, run_tasks.WORK_ROOT / task_dir.name)

    def run(sandbox: str) -> str:
        out = tmp_path / "out.json"
        template = _shell(look, sandbox) + f" > {out}"
        outcome = run_tasks.run_one(sandbox, template, task_dir, "http://127.0.0.1:1/v1", "m", 180)
        assert not outcome.solved
        result = json.loads(out.read_text())
        output = result["output"]  # nothing cut out of it
        assert result["full_output_chars"] == len(output) and "only its head and tail were kept" not in output
        return output

    inside = run("workspace-write")
    assert "sales.csv" in inside and "[exit code:" in inside  # it ran, in the workspace
    for path, text in _secrets().items():
        assert text.strip() not in inside, path
    named = [line for line in inside.splitlines() if "benchmarks/tasks" in line]
    assert len(named) >= 10 and all("No such file or directory" in line for line in named), named

    wanted = [(task_dir / name).read_text().strip() for name in ("check.sh", "solution.sh", "hidden/check.py")]
    outside = run("off")  # control 1: no sandbox, the same command reads every one
    assert all(text in outside for text in wanted) and f"{task_dir}/check.sh\n" in outside
    monkeypatch.setattr(run_tasks, "agent_env", lambda environ, *_: dict(environ))
    uncleaned = run("workspace-write")  # control 2: the sandbox mounts benchmarks/ from PATH
    assert all(text in uncleaned for text in wanted) and f"{task_dir}/check.sh\n" in uncleaned


def test_results_are_appended_with_the_commit_and_a_run_resumes_by_item(tmp_path: Path) -> None:
    run_tasks = _runner()
    results = tmp_path / "results" / "dev.jsonl"
    run_tasks.append_result(results, run_tasks.Outcome("codeloop", "01_create_script", True, 12.5, ""), "dev", "0.5b")
    run_tasks.append_result(results, run_tasks.Outcome("codeloop", "02_x", False, 3.0, "n"), "heldout", "0.5b")
    with results.open("a") as out:
        out.write('{"agent": "codeloop", "task": "03_cut')  # a line cut by a kill
    rows = [json.loads(line) for line in results.read_text().splitlines()[:2]]
    assert rows[0]["commit"] not in ("", "unknown") and rows[0]["split"] == "dev"
    done = run_tasks.load_results(results, "dev", "0.5b")
    assert list(done) == [("codeloop", "01_create_script")]
    assert done["codeloop", "01_create_script"].seconds == 12.5
    assert run_tasks.load_results(results, "dev", "1.5b") == {}
