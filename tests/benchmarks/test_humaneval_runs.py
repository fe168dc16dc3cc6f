"""benchmarks/humaneval.py across sessions (issue 33): the drafts of a codeloop run, each checked
alone with the hidden tests (pass@1, pass@N, choice accuracy), and a run that resumes by item
from its ``--out`` file. No model: the event streams are written here by hand, in the form
``codeloop run --json`` prints (``agent/events.py``: ``kind``, ``data.text``); the "codeloop"
agent of the whole-run test is a shell command printing such a stream."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import httpx
import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
import humaneval as he  # noqa: E402
import run_tasks  # noqa: E402

PROBLEMS = he.load_problems()
ZERO = PROBLEMS[0]  # has_close_elements
CANONICAL = ZERO.prompt + ZERO.canonical_solution


def event(kind: str, **data: object) -> str:
    return json.dumps({"kind": kind, "timestamp": "2026-11-29T05:00:00.000+00:00", "session_id": "s", "data": data})


def reply(text: str) -> str:
    """A model reply as ``codeloop run --json`` prints it."""
    return event("assistant_text_end", text=text, reasoning=None, tool_call_count=0, input_tokens=10,
                 output_tokens=5, cache_read_tokens=0)


WHOLE = f"FILE solution.py\n```python\n{CANONICAL}```\n"
"""The canonical solution as one whole FILE block."""
HUNK = ('FILE solution.py\n<<<<<<< SEARCH\n    True\n    """\n=======\n    True\n    """\n'
        f"{ZERO.canonical_solution}>>>>>>> REPLACE\n")
"""The canonical body added after the docstring, by a hunk whose SEARCH text is in the prompt."""
MISSING = ('FILE solution.py\n<<<<<<< SEARCH\ndef has_close_elements(numbers, threshold):\n=======\n'
           f"def has_close_elements(numbers, threshold):\n{ZERO.canonical_solution}>>>>>>> REPLACE\n")
"""The same body, but the SEARCH text (an unannotated signature) is not in the prompt."""


def test_a_whole_file_draft_of_the_canonical_solution_passes_and_is_the_greedy_one() -> None:
    assert he.draft_source(ZERO, WHOLE) == CANONICAL
    assert he.draft_record(ZERO, reply(WHOLE) + "\n") == {"drafts": 1, "drafts_passing": 1, "greedy_passed": True}
    wrong = f"FILE solution.py\n```python\n{ZERO.prompt}    return False\n```\n"
    assert he.draft_record(ZERO, "\n".join([reply(wrong), reply(WHOLE)])) == {
        "drafts": 2, "drafts_passing": 1, "greedy_passed": False}


def test_a_draft_is_read_as_the_strategy_reads_it_blocks_before_a_cut_kept_the_formats_example_dropped() -> None:
    from codeloop.agent.small_model.reply_format import REPLY_FORMAT_PROMPT

    cut = WHOLE + "\nFILE solution.py\n```python\ndef has_close"  # cut off at max_tokens mid-block
    assert he.draft_source(ZERO, cut) == CANONICAL
    start = REPLY_FORMAT_PROMPT.index("```python\n")
    example = REPLY_FORMAT_PROMPT[start:REPLY_FORMAT_PROMPT.index("```\n", start + 3) + 4]
    assert he.draft_source(ZERO, "FILE solution.py\n" + example) is None


def test_a_hunk_applies_to_the_prompt_and_one_whose_search_text_is_missing_does_not_pass() -> None:
    assert he.draft_source(ZERO, HUNK) == CANONICAL
    assert he.draft_source(ZERO, MISSING) is None
    assert he.draft_record(ZERO, "\n".join([reply(MISSING), reply(HUNK)])) == {
        "drafts": 2, "drafts_passing": 1, "greedy_passed": False}


def test_a_run_draft_a_done_draft_a_draft_outside_the_format_and_one_beside_solution_py_do_not_pass() -> None:
    beside = f"FILE other.py\n```python\n{CANONICAL}```\n"
    texts = ["RUN python3 solution.py", "DONE\nImplemented.", f"```python\n{CANONICAL}```\n", beside]
    for text in texts:
        assert he.draft_source(ZERO, text) is None, text
    assert he.draft_record(ZERO, "\n".join(map(reply, texts))) == {
        "drafts": 4, "drafts_passing": 0, "greedy_passed": False}


def test_only_model_replies_count_as_drafts_and_lines_that_are_not_events_are_skipped() -> None:
    stream = "\n".join([
        "codeloop: a line that is not JSON",
        reply("RUN ls"),
        '{"kind": "assistant_text_end", "data": {"text": "cut by a kill',  # torn: not JSON
        event("warning", message="draft 1: cannot be applied", code="small_model"),
        event("assistant_text_start"),
        event("user_input", content=WHOLE, text=WHOLE),  # another kind, even with a text, is no draft
        "3", "[]", '{"kind": "assistant_text_end"}', '{"kind": "assistant_text_end", "data": {"text": 7}}',
        reply(WHOLE),
        event("session_end", reason="completed"),
    ])
    assert he.draft_texts(stream) == ["RUN ls", WHOLE]
    assert he.draft_record(ZERO, stream) == {"drafts": 2, "drafts_passing": 1, "greedy_passed": False}
    assert he.draft_record(ZERO, "") == {"drafts": 0, "drafts_passing": 0, "greedy_passed": False}


def test_codeloop_presets_print_their_events_instead_of_the_answer_and_keep_their_other_flags() -> None:
    codeloops = [name for name in run_tasks.PRESETS if he.is_codeloop(name)]
    assert {"codeloop", "codeloop-no-strategy", "codeloop-url"} <= set(codeloops)
    assert not he.is_codeloop("mini") and not he.is_codeloop("bare")
    for name in codeloops:
        template = he.json_template(run_tasks.PRESETS[name])
        assert shlex.split(template) == ["--json" if w == "--quiet" else w for w in shlex.split(run_tasks.PRESETS[name])]
    with pytest.raises(SystemExit, match="no single --quiet"):
        he.json_template("codeloop run {task} --quiet-ish")


def test_an_agents_stdout_is_returned_too_even_when_it_is_killed(tmp_path: Path) -> None:
    _, note, stdout = run_tasks.run_agent_output("echo one; echo two >&2; echo {task}", "three", tmp_path,
                                                 "http://127.0.0.1:1/v1", "m", 60)
    assert (note, stdout) == ("", "one\nthree\n")
    # run_agent, as its callers use it: (seconds, note), nothing more.
    assert run_tasks.run_agent("echo one; echo {task}", "three", tmp_path, "http://127.0.0.1:1/v1", "m", 60)[1:] == ("",)
    _, note, stdout = run_tasks.run_agent_output("echo before; exec sleep 60", "t", tmp_path, "u", "m", 1)
    assert (note, stdout) == ("timed out after 1s", "before\n")


def _row(agent: str, task: str, solved: bool, model: str = "m", commit: str = "aaaaaaa", **extra: object) -> dict:
    return {"agent": agent, "task": task, "solved": solved, "seconds": 2.5, "note": "", "model": model,
            "commit": commit, "date": "2026-11-28T20:00:00Z", **extra}


def test_the_loader_returns_the_parsed_rows_of_the_model_and_skips_torn_lines(tmp_path: Path) -> None:
    rows = [_row("bare", "HumanEval/0", True, reply="r"),
            _row("codeloop", "HumanEval/0", False, drafts=2, drafts_passing=1, greedy_passed=False),
            _row("bare", "HumanEval/4", True, model="0.5b")]
    out = tmp_path / "he.jsonl"
    out.write_text("".join(json.dumps(r) + "\n" for r in rows)
                   + json.dumps(_row("codeloop", "HumanEval/4", True))[:40] + "\n"  # cut by a kill
                   + '{"agent": "bare", "task": "HumanEval/8", "model": "m"}\n'  # no outcome in it
                   + "\n[1, 2]\n")
    assert he.load_rows(out, "m") == {("bare", "HumanEval/0"): rows[0], ("codeloop", "HumanEval/0"): rows[1]}
    assert he.load_rows(out, "0.5b") == {("bare", "HumanEval/4"): rows[2]}
    assert he.load_rows(tmp_path / "none.jsonl", "m") == {}


def test_rows_of_another_commit_draw_a_warning_naming_both() -> None:
    rows = [_row("bare", "HumanEval/0", True), _row("bare", "HumanEval/4", True, commit="bbbbbbb")]
    warning = he.commit_warning(rows, Path("he.jsonl"), "bbbbbbb")
    assert warning is not None and "aaaaaaa" in warning and "bbbbbbb" in warning and "one commit" in warning
    assert he.commit_warning(rows[1:], Path("he.jsonl"), "bbbbbbb") is None


def test_the_summary_gives_pass_at_1_pass_at_n_choice_accuracy_and_the_problems_never_tuned_on() -> None:
    problems = he.select(PROBLEMS, ids="0,1,4,17")  # 1 and 17 are dev problems
    # HumanEval/4: solved, though no draft passes alone (a later step built on an earlier one).
    rows = {}
    for task, solved, passing, greedy in [("HumanEval/0", True, 2, True), ("HumanEval/1", False, 1, False),
                                          ("HumanEval/4", True, 0, False), ("HumanEval/17", True, 3, False)]:
        rows["codeloop", task] = _row("codeloop", task, solved, drafts=3, drafts_passing=passing, greedy_passed=greedy)
        rows["bare", task] = _row("bare", task, task != "HumanEval/4")
    assert he.summary_lines(["codeloop", "bare"], problems, rows) == [
        "codeloop: pass@1 (greedy draft) 1/4, pass@N (any draft) 3/4, solved 3/4, choice accuracy 2/3 "
        "(solved among problems with a passing draft)",
        "codeloop on the dev subset: pass@1 (greedy draft) 0/2, pass@N (any draft) 2/2, solved 1/2, "
        "choice accuracy 1/2 (solved among problems with a passing draft)",
        "apart from the dev subset (2 problems never used while tuning): codeloop 2/2 (100.0 %), bare 1/2 (50.0 %)",
    ]
    assert he.summary_lines(["bare"], problems[1:2], rows) == []  # the dev subset alone: nothing apart


def test_a_run_resumes_by_item_from_its_results_and_counts_what_it_resumed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A second session of a run: (bare, 0) is in the file from an earlier commit, beside a line
    cut by a kill and a row of another model. The "codeloop" agent prints a hand-written event
    stream and leaves a solution; bare is asked only for the problem it has not done."""
    one = PROBLEMS[1]
    streams, answers = tmp_path / "streams", tmp_path / "answers"
    streams.mkdir()
    answers.mkdir()
    (streams / "HumanEval_0.jsonl").write_text("\n".join([reply(MISSING), "not an event", reply(WHOLE)]) + "\n")
    (answers / "HumanEval_0.py").write_text(CANONICAL)
    (streams / "HumanEval_1.jsonl").write_text(reply("RUN python3 solution.py") + "\n")
    (answers / "HumanEval_1.py").write_text(one.prompt)
    flags = tmp_path / "flags.txt"
    script = (f'echo "$0" >> {flags}; cat {streams}/$(basename "$PWD").jsonl; '
              f'cp {answers}/$(basename "$PWD").py solution.py')
    monkeypatch.setitem(run_tasks.PRESETS, "codeloop", f"sh -c {shlex.quote(script)} --quiet")
    monkeypatch.setattr(he, "WORK_ROOT", tmp_path / "work")
    asked: list[str] = []

    def post(url: str, *, json: dict, timeout: float, headers: dict) -> httpx.Response:
        asked.append(json["messages"][0]["content"])
        return httpx.Response(200, json={"choices": [{"message": {"content": "no idea"}}]},
                              request=httpx.Request("POST", url))
    monkeypatch.setattr(he.httpx, "post", post)
    out, md = tmp_path / "he.jsonl", tmp_path / "he.md"
    earlier = _row("bare", "HumanEval/0", True, commit="0000000", reply="earlier")
    out.write_text(json.dumps(earlier) + "\n" + json.dumps(_row("codeloop", "HumanEval/1", True))[:30] + "\n"
                   + json.dumps(_row("codeloop", "HumanEval/0", False, model="other")) + "\n")
    argv = ["humaneval.py", "--agent", "codeloop", "--agent", "bare", "--ids", "0,1", "--base-url",
            "http://127.0.0.1:1/v1", "--model", "m", "--out", str(out), "--markdown", str(md)]
    monkeypatch.setattr(sys, "argv", argv)
    he.main()

    printed = capsys.readouterr()
    commit = run_tasks.current_commit()
    assert "resuming: 1 outcomes" in printed.err
    assert "commit 0000000" in printed.err and f"at {commit}" in printed.err
    assert len(asked) == 1 and f"def {one.entry_point}(" in asked[0]
    assert flags.read_text().splitlines() == ["--json", "--json"]
    rows = [json.loads(line) for line in out.read_text().splitlines()[3:]]
    assert [(r["agent"], r["task"], r["solved"], r["model"], r["commit"]) for r in rows] == [
        ("codeloop", "HumanEval/0", True, "m", commit), ("codeloop", "HumanEval/1", False, "m", commit),
        ("bare", "HumanEval/1", False, "m", commit)]
    assert all(r["date"].endswith("Z") for r in rows)
    assert [(r["drafts"], r["drafts_passing"], r["greedy_passed"]) for r in rows[:2]] == [(2, 1, False), (1, 0, False)]
    assert rows[0]["solution"] == CANONICAL and rows[2]["reply"] == "no idea" and "drafts" not in rows[2]
    assert "codeloop   HumanEval/0    passed" in printed.out and "drafts 1/2 passing" in printed.out
    summary = ["codeloop: pass@1 (greedy draft) 0/2, pass@N (any draft) 1/2, solved 1/2, choice accuracy 1/1 "
               "(solved among problems with a passing draft)",
               "codeloop on the dev subset: pass@1 (greedy draft) 0/1, pass@N (any draft) 0/1, solved 0/1, "
               "choice accuracy 0/0 (solved among problems with a passing draft)",
               "apart from the dev subset (1 problems never used while tuning): codeloop 1/1 (100.0 %), "
               "bare 1/1 (100.0 %)"]
    table = md.read_text()
    assert "| bare | 1/2 (50.0 %) |" in table and "| codeloop | 1/2 (50.0 %) |" in table  # the resumed one counts
    assert table.endswith("\n\n" + "".join(f"{line}\n" for line in summary))
    assert all(line in printed.out for line in summary)

    # A third session: everything is done, nothing runs (no server, no agent, no request), the
    # same figures.
    def no_server(model: str) -> str:
        raise AssertionError("a server was started")
    monkeypatch.setattr(run_tasks, "local_base_url", no_server)
    monkeypatch.setattr(sys, "argv", [a for a in argv if a not in ("--base-url", "http://127.0.0.1:1/v1")])
    monkeypatch.setitem(run_tasks.PRESETS, "codeloop", "exit 3 --quiet")
    monkeypatch.setattr(he.httpx, "post", None)
    lines_before = out.read_text()
    he.main()
    assert out.read_text() == lines_before and md.read_text() == table
    assert "resuming: 4 outcomes" in capsys.readouterr().err
