"""Run the small everyday coding tasks of ``benchmarks/tasks/`` through any agent.

Each task folder holds ``setup/`` (the starting workspace), ``task.txt`` (the instruction),
``check.sh`` (exit 0 when solved, run in the workspace) and ``solution.sh`` (a reference
solution; ``tests/benchmarks/test_tasks.py`` proves every check fails before it and passes
after it). The agent is a shell command template; placeholders:

    {task}      the instruction, shell-quoted
    {workdir}   the task's fresh workspace (also the command's working directory)
    {base_url}  the OpenAI-compatible server (--base-url, default: start scripts/local-llm)
    {model}     the model name given with --model

Examples::

    # codeloop against the local 1.5B model (started on demand)
    python benchmarks/run_tasks.py --agent codeloop --model 1.5b
    # codeloop with and without the diagnostics after edits, same server, same run
    python benchmarks/run_tasks.py --agent codeloop --agent codeloop-no-diagnostics --model 1.5b
    # mini-swe-agent from its own venv, same server, same run
    python benchmarks/run_tasks.py --agent codeloop --agent mini --model 1.5b
    # anything else
    python benchmarks/run_tasks.py --agent-cmd 'myagent --url {base_url} {task}' --name mine

``--split dev|heldout|all`` (default all) picks the tasks by ``tasks/split.json``: choose among
modes on ``dev`` only; ``heldout`` is run to report, never to tune (issue 20). ``--split reworded``
runs the dev tasks (same setup, same check) with the instructions of ``tasks_reworded/`` (the same
tasks in other words, written before the small-model strategy of issue 33): a result that holds
on ``dev`` but not on ``reworded`` came from the wording.

Prints one line per task and agent, then solved/total and mean time per agent, and with
``--markdown FILE`` writes the same table for docs/local-models.md.

What the agent must not read (``hidden_paths``: the tasks' folders with ``check.sh``,
``solution.sh`` and ``hidden/``, and the repository's git directory, which holds them too) stays
outside every path codeloop's sandbox mounts: each workspace is a copy of ``setup/`` elsewhere,
the agent's environment drops the ``PATH`` entries and toolchain variables that would mount them
(``agent_env``), and the runner refuses to start when they would still be visible.
``tests/benchmarks/test_tasks.py`` proves it with the real ``codeloop tool shell``.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from codeloop.environments.resolver import is_within
from codeloop.environments.sandbox import TOOLCHAIN_VARIABLES, system_mounts, toolchain_dirs
from codeloop.environments.worktrees import git_mounts

HERE = Path(__file__).resolve().parent
TASKS = HERE / "tasks"
REPO = HERE.parent
BENCH_VENVS = REPO / ".bench"
SPLIT = TASKS / "split.json"
"""``{"dev": [task names], "heldout": [task names]}``; every task is in exactly one."""
REWORDED = HERE / "tasks_reworded"
"""``<task>/task.txt`` for each dev task: its instruction reworded (never edited once committed)."""
SPLITS = ("dev", "heldout", "reworded", "all")
WORK_ROOT = Path(tempfile.gettempdir()) / "codeloop-tasks"
"""Where each task's workspace is made (``WORK_ROOT/<task>``), the same path on every run."""

CODELOOP = shlex.quote(str(Path(sys.executable).with_name("codeloop")))
PRESETS = {
    # The embedded default a new user gets (no key, no --base-url): codeloop finds the local
    # server run_tasks started (scripts/local-llm serve, the same --model) and asks it for the
    # prompt cache, as every `codeloop run` without a key does. {base_url} is not used, and the
    # dummy key run_agent sets for litellm-based peers is taken away (with it, codeloop would
    # choose the OpenAI provider).
    "codeloop": (
        f"env -u OPENAI_API_KEY -u OPENAI_BASE_URL -u OPENAI_API_BASE {CODELOOP} run {{task}} --cwd {{workdir}} --model {{model}} "
        "--approval never-ask --sandbox workspace-write --max-turns 30 --quiet"
    ),
    # codeloop pointed at any OpenAI-compatible server (--base-url): no prompt cache asked for.
    "codeloop-url": (
        f"{CODELOOP} run {{task}} --cwd {{workdir}} "
        "--base-url {base_url} --model {model} --provider openai_compatible --profile text "
        "--approval never-ask --sandbox workspace-write --max-turns 30 --quiet"
    ),
    # mini-swe-agent 2.x with its default config (mini.yaml) through litellm's OpenAI-compatible
    # route; -y runs without asking, -l 0 lifts the cost limit (a local model has no price),
    # temperature 0 and a step limit like codeloop's --max-turns keep the comparison fair.
    "mini": (
        f"{BENCH_VENVS / 'mini' / 'bin' / 'mini'} -y --exit-immediately -l 0 -m openai/{{model}} "
        "-c mini.yaml -c model.model_kwargs.temperature=0 -c model.model_kwargs.api_base={base_url} "
        "-c agent.step_limit=30 -t {task}"
    ),
    # The same with mini's text-based config (actions in ```mswea_bash_command fences, no
    # structured tool calls), which suits models that do not emit tool_calls.
    "mini-text": (
        f"{BENCH_VENVS / 'mini' / 'bin' / 'mini'} -y --exit-immediately -l 0 -m openai/{{model}} "
        "--model-class litellm_textbased -c mini_textbased.yaml -c model.model_kwargs.temperature=0 "
        "-c model.model_kwargs.api_base={base_url} -c agent.step_limit=30 -t {task}"
    ),
}
# codeloop without the diagnostics after edits (docs/tools.md), to measure them in the same run.
PRESETS["codeloop-no-diagnostics"] = PRESETS["codeloop"] + " --no-diagnostics"
# codeloop without the small-model rescues (docs/local-models.md), the default before issue 20.
PRESETS["codeloop-no-rescues"] = PRESETS["codeloop"] + " --no-rescues"
# The reply modes issue 20 asks to choose among, beside the default (tagged text calls):
# constrained decoding (every reply one JSON call or a final answer, a JSON Schema per reply).
PRESETS["codeloop-constrained"] = PRESETS["codeloop"] + " --constrained on"
# The tool loop with the rescues, as before the small-model strategy of issue 33 (which the
# "codeloop" preset runs with the local model).
PRESETS["codeloop-no-strategy"] = PRESETS["codeloop"] + " --no-strategy"


@dataclass
class Outcome:
    agent: str
    task: str
    solved: bool
    seconds: float
    note: str


def ensure_mini() -> None:
    """Install mini-swe-agent into .bench/mini (its own venv) once."""
    venv = BENCH_VENVS / "mini"
    if (venv / "bin" / "mini").exists():
        return
    BENCH_VENVS.mkdir(exist_ok=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "mini-swe-agent", "mcp"], check=True)


def local_base_url(model: str) -> str:
    done = subprocess.run(
        [str(REPO / "scripts" / "local-llm"), "serve", "--model", model],
        capture_output=True, text=True, check=True,
    )
    return done.stdout.strip().splitlines()[-1]


def select_tasks(split: str = "all") -> list[Path]:
    """The task folders of one split of ``SPLIT`` ("dev" or "heldout"), or all of them, sorted;
    "reworded" gives the dev folders (their instructions come from ``instruction_file``)."""
    tasks = sorted(p for p in TASKS.iterdir() if (p / "task.txt").exists())
    if split == "all":
        return tasks
    names = set(json.loads(SPLIT.read_text())["dev" if split == "reworded" else split])
    return [t for t in tasks if t.name in names]


def instruction_file(task_dir: Path, split: str = "all") -> Path:
    """Where the instruction of ``task_dir`` is read in ``split``: its reworded copy for
    "reworded", its own ``task.txt`` otherwise."""
    return REWORDED / task_dir.name / "task.txt" if split == "reworded" else task_dir / "task.txt"


# -- keeping what the agent must not read out of its sandbox -------------------------------------


def hidden_paths() -> list[str]:
    """What no agent may read: the tasks (``check.sh``, ``solution.sh``, ``hidden/``) and the
    repository's git directory (its objects hold the same files)."""
    dot_git = REPO / ".git"
    # A linked worktree's .git file points into the main repository's git directory.
    git_dir = git_mounts(str(REPO), False)[2:] or ([str(dot_git)] if dot_git.is_dir() else [])
    return [str(TASKS), *git_dir]


def sandbox_mounts(env: Mapping[str, str], workspace: Path) -> list[str]:
    """The directories codeloop's sandbox (``environments/sandbox.py``) mounts for a command in
    ``workspace`` started with ``env``: the system directories, the toolchains ``env`` names, the
    workspace and, when it is a linked git worktree, its repository's git directory."""
    ws = os.path.realpath(workspace)
    system = [path for path, link in system_mounts() if link is None]
    return [*system, *toolchain_dirs(env, ws), ws, *git_mounts(ws, False)[2:]]


def _overlaps(hidden: Sequence[str], mounts: Sequence[str]) -> list[tuple[str, str]]:
    return [(path, mount) for path in map(os.path.realpath, hidden) for mount in mounts
            if is_within(path, mount) or is_within(mount, path)]


def exposure(hidden: Sequence[str], env: Mapping[str, str], workspace: Path) -> list[tuple[str, str]]:
    """(hidden path, mount) for each of ``hidden`` that lies inside, or holds, a directory the
    sandbox would mount for a command in ``workspace`` started with ``env``. Empty when none is
    visible."""
    return _overlaps(hidden, sandbox_mounts(env, workspace))


def agent_env(environ: Mapping[str, str], workspace: Path, hidden: Sequence[str], *,
              what: str = "the tasks' checks",
              fix: str = "keep the repository outside /usr and the other system directories, "
                         "and TMPDIR outside the repository") -> dict[str, str]:
    """``environ`` without the ``PATH`` entries and toolchain variables that would make the
    sandbox mount a directory holding (or inside) one of ``hidden``: an activated virtualenv
    holding a benchmark's tests, the repository's ``benchmarks/`` on ``PATH``. Refuses (SystemExit: ``what`` would be visible, then ``fix``) when one would
    still be visible."""
    ws = os.path.realpath(workspace)
    home = {"HOME": environ["HOME"]} if "HOME" in environ else {}

    def exposes(name: str, value: str) -> bool:
        return bool(_overlaps(hidden, toolchain_dirs({**home, name: value}, ws)))

    env = {k: v for k, v in environ.items() if k not in TOOLCHAIN_VARIABLES or not exposes(k, v)}
    env["PATH"] = ":".join(e for e in environ.get("PATH", "").split(":") if not exposes("PATH", e))
    left = exposure(hidden, env, workspace)
    if left:
        path, mount = left[0]
        raise SystemExit(f"{what} at {path} would be visible to the agent's sandbox (it mounts {mount}); {fix}")
    return env


# -- running agents ----------------------------------------------------------------------------


def run_agent(template: str, instruction: str, workdir: Path, base_url: str, model: str, timeout: int,
              env: dict[str, str] | None = None) -> tuple[float, str]:
    """Run one agent command template on ``instruction`` in ``workdir`` (also its working
    directory) with ``env`` (default: this process's environment); return (seconds, note), the
    note empty unless the command failed or timed out."""
    seconds, note, _ = run_agent_output(template, instruction, workdir, base_url, model, timeout, env=env)
    return seconds, note


def run_agent_output(template: str, instruction: str, workdir: Path, base_url: str, model: str, timeout: int,
                     env: dict[str, str] | None = None) -> tuple[float, str, str]:
    """``run_agent``, and what the command wrote on stdout (up to the kill, when it timed out):
    (seconds, note, stdout)."""
    command = template.format(
        task=shlex.quote(instruction), workdir=shlex.quote(str(workdir)),
        base_url=shlex.quote(base_url), model=shlex.quote(model),
    )
    env = dict(os.environ if env is None else env)
    # Point litellm-based peers at the same server; keys are dummies for a local server.
    env.update({"OPENAI_API_BASE": base_url, "OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "sk-local",
                "MSWEA_CONFIGURED": "true", "MSWEA_COST_TRACKING": "ignore_errors"})
    start = time.monotonic()
    note = ""
    proc = subprocess.Popen(command, shell=True, cwd=workdir, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
        if proc.returncode != 0:
            note = f"exit {proc.returncode}: {(stderr or stdout).strip()[-160:]}"
    except subprocess.TimeoutExpired:
        # Kill the agent's whole process group: killing only the shell would leave the agent
        # running (and sending requests to the shared model server) during the next tasks.
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, _ = proc.communicate()
        note = f"timed out after {timeout}s"
    return time.monotonic() - start, note.replace("\n", " "), stdout or ""


def run_one(agent: str, template: str, task_dir: Path, base_url: str, model: str, timeout: int,
            instruction: Path | None = None) -> Outcome:
    """Run ``agent`` on ``task_dir`` (its ``task.txt``, or the ``instruction`` file given) in a
    fresh copy of its setup, then its check."""
    # A fixed path per task, not a random temp name: the workspace path is part of the agent's
    # prompt, and a different path alone changes what a temperature-0 model writes.
    workdir = WORK_ROOT / task_dir.name
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(task_dir / "setup", workdir)
    text = (instruction or task_dir / "task.txt").read_text().strip()
    env = agent_env(os.environ, workdir, [*hidden_paths(), str(task_dir)])
    seconds, note = run_agent(template, text, workdir, base_url, model, timeout, env=env)
    check = subprocess.run(["bash", str(task_dir / "check.sh")], cwd=workdir, capture_output=True, timeout=60)
    shutil.rmtree(workdir, ignore_errors=True)
    return Outcome(agent, task_dir.name, check.returncode == 0, seconds, note)


def results_table(agents: list[str], tasks: list[str], outcomes: list[Outcome], percent: bool = False) -> str:
    """The Markdown summary: solved (with ``percent``, also as a share) and mean time per
    agent, then one row per task with each agent's mark and time."""
    lines = ["| agent | solved | mean time per task |", "|---|---|---|"]
    for name in agents:
        mine = [o for o in outcomes if o.agent == name]
        solved = sum(o.solved for o in mine)
        mean = sum(o.seconds for o in mine) / max(len(mine), 1)
        share = f" ({100 * solved / max(len(mine), 1):.1f} %)" if percent else ""
        lines.append(f"| {name} | {solved}/{len(mine)}{share} | {mean:.1f} s |")
    lines += ["", "| task | " + " | ".join(agents) + " |", "|---|" + "---|" * len(agents)]
    for task in tasks:
        cells = []
        for name in agents:
            o = next(o for o in outcomes if o.agent == name and o.task == task)
            cells.append(f"{'✔' if o.solved else '✘'} {o.seconds:.0f} s")
        lines.append(f"| {task} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def current_commit() -> str:
    """The repository's HEAD (what a figure is measured at), or "unknown"."""
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                          cwd=Path(__file__).parent, check=False)
    return done.stdout.strip() or "unknown"


def load_results(path: Path, split: str, model: str) -> dict[tuple[str, str], Outcome]:
    """The outcomes already in ``path`` for ``split`` and ``model``, by (agent, task)."""
    found: dict[tuple[str, str], Outcome] = {}
    if not path.exists():
        return found
    for line in path.read_text("utf-8").splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue  # a line cut by a kill: run that item again
        if row.get("split") == split and row.get("model") == model:
            found[row["agent"], row["task"]] = Outcome(row["agent"], row["task"], bool(row["solved"]),
                                                       float(row["seconds"]), row.get("note", ""))
    return found


def append_result(path: Path, outcome: Outcome, split: str, model: str) -> None:
    """Append ``outcome`` as one JSON line (with the split, model, commit and date)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    row = {**outcome.__dict__, "split": split, "model": model, "commit": current_commit(),
           "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    with path.open("a", encoding="utf-8") as out:
        out.write(json.dumps(row) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agent", action="append", choices=sorted(PRESETS), help="preset agent(s)")
    parser.add_argument("--agent-cmd", help="a command template (see the module docstring)")
    parser.add_argument("--name", default="custom", help="name of --agent-cmd in the report")
    parser.add_argument("--model", default="1.5b", help="local model (0.5b|1.5b) or a served model name")
    parser.add_argument("--base-url", help="OpenAI-compatible server; default: scripts/local-llm serve")
    parser.add_argument("--split", choices=SPLITS, default="all",
                        help="the tasks of one half of tasks/split.json, or the dev half reworded "
                             "(tasks_reworded/) (default: all)")
    parser.add_argument("--only", help="comma-separated task name prefixes")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per task and agent")
    parser.add_argument("--markdown", type=Path, help="also write the table to this file")
    parser.add_argument("--json", action="store_true", help="one JSON object per outcome")
    parser.add_argument("--results", type=Path,
                        help="append each outcome to this JSONL file, with the commit; outcomes already "
                             "in it (same agent, task, split and model) are not run again: a run resumes")
    args = parser.parse_args()

    agents = [(name, PRESETS[name]) for name in (args.agent or [])]
    if args.agent_cmd:
        agents.append((args.name, args.agent_cmd))
    if not agents:
        agents = [("codeloop", PRESETS["codeloop"])]
    tasks = select_tasks(args.split)
    if args.only:
        prefixes = tuple(args.only.split(","))
        tasks = [t for t in tasks if t.name.startswith(prefixes)]
    for task_dir in tasks:  # refuse before anything starts, not at the first task
        agent_env(os.environ, WORK_ROOT / task_dir.name, [*hidden_paths(), str(task_dir)])
    if any(name.startswith("mini") for name, _ in agents):
        ensure_mini()
        print("note: mini-swe-agent runs its commands without a sandbox", file=sys.stderr)
    base_url = args.base_url or local_base_url(args.model)

    outcomes: list[Outcome] = []
    done = load_results(args.results, args.split, args.model) if args.results else {}
    for task_dir in tasks:
        for name, template in agents:  # the agents interleaved per task: the same load on each
            if (name, task_dir.name) in done:
                outcomes.append(done[name, task_dir.name])
                continue
            outcome = run_one(name, template, task_dir, base_url, args.model, args.timeout,
                              instruction_file(task_dir, args.split))
            outcomes.append(outcome)
            if args.results:
                append_result(args.results, outcome, args.split, args.model)
            if args.json:
                print(json.dumps(outcome.__dict__), flush=True)
            else:
                mark = "solved" if outcome.solved else "FAILED"
                print(f"{name:10} {task_dir.name:28} {mark:7} {outcome.seconds:7.1f}s {outcome.note}", flush=True)

    table = results_table([n for n, _ in agents], [t.name for t in tasks], outcomes)
    print(table, file=sys.stderr if args.json else sys.stdout)
    if args.markdown:
        args.markdown.write_text(table + "\n")


if __name__ == "__main__":
    main()
