"""One task of ``codeloop batch`` in a worker process (issue 39): ``codeloop run``'s own ``run_task``.

:func:`run_batch_task` is what a pool worker or a Ray task calls. The task runs as an ordinary
session: the same options are settled the same way (``settle_options``: flags, config files,
sandbox), ``prepare`` reads the instruction as ``codeloop run "TASK"`` does (``/NAME``
commands, ``@file``), and the same ``run_task`` (its :class:`~codeloop.cli.run.Runner`) opens
the model, the environment and the recorded Session and runs it. What differs is only who
answers: nobody waits at a terminal, so a call needing approval is denied with a reason
(``--approval never-ask``, the batch's default, allows them, in the sandbox); and no terminal
line steers it.

Every task has its own directories (``environments/task_workspace.py`` ``TaskDirs``), and its
own state directory holds its one session log, so a restart finds it again: a log whose last
input ended is finished (only the check and the patch are redone), a log with an input that
did not end is resumed where it stopped (``Session.go_on``), and no log starts the task. A
lock on the task's directory keeps two processes from running one task at once (a worker
of a killed batch still winding down). The result is also written to ``result.json`` in the
task's directory before it is returned, so a batch killed before recording it records it on
restart without running anything again.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codeloop.batch.log_mirror import LogMirror, LogStore, MirroredLog
from codeloop.batch.tasks import TaskSpec
from codeloop.environments.atomic import atomic_write
from codeloop.environments.task_workspace import (
    TaskDirs,
    TaskWorkspaceError,
    apply_patch,
    prepare_workspace,
    workspace_patch,
)

WORK_DIR_VARIABLE = "CODELOOP_BATCH_WORK_DIR"
"""A node's own directory for the tasks it runs (``codeloop batch --ray``): set it in the
environment of ``ray start`` on each node; unset, the user cache directory's ``batch/``."""
CHECK_OUTPUT_CHARS = 4000
"""The end of the check command's output kept in the result."""
NOBODY_ANSWERS = ("no one answers approvals in codeloop batch: pass --approval never-ask to allow such "
                  "calls (commands still run in the sandbox)")


@dataclass(frozen=True)
class BatchOptions:
    """The batch's own options, the same for every task (a task's ``model``/``limits`` win)."""

    tasks_dir: str
    """Directory of the tasks file (relative workspace sources start there)."""
    work_dir: str | None
    """Where tasks' directories go; None: the node's own (:data:`WORK_DIR_VARIABLE`)."""
    flags: dict[str, Any] = field(default_factory=dict)
    """``codeloop run`` flags: model, provider, profile, base_url, sandbox, approval, max_*."""
    network: str | None = None
    """``--network`` on or off (None: the sandbox's default)."""
    batch_key: str = ""
    """Names this batch among others on a node's shared work directory (from the results
    file: the same batch restarted finds its tasks' directories again, another batch whose
    ids are the same does not take their results)."""


def batch_key(results: Path) -> str:
    """The :attr:`BatchOptions.batch_key` of the batch writing ``results`` from this machine."""
    import hashlib
    import socket

    return hashlib.sha256(f"{socket.gethostname()}\0{results.resolve()}".encode()).hexdigest()[:16]


def node_work_dir(options: BatchOptions) -> Path:
    """The work directory of the node this runs on, for this batch."""
    if options.work_dir is not None:
        return Path(options.work_dir)
    configured = os.environ.get(WORK_DIR_VARIABLE)
    if configured:
        return Path(configured) / options.batch_key
    import platformdirs

    return Path(platformdirs.user_cache_dir("codeloop")) / "batch" / options.batch_key


def session_logs(dirs: TaskDirs) -> list[Path]:
    """The task's session log (one at most: its state directory is its own)."""
    sessions = dirs.state / "sessions"
    return sorted(sessions.glob("*.jsonl")) if sessions.is_dir() else []


def _events(log: Path) -> list[Any]:
    """The events of a task's log, read from its path (not through ``CODELOOP_STATE_DIR``)."""
    import warnings

    from codeloop.sessions.log import SessionLogWarning, parse_log

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SessionLogWarning)  # a torn last line: the resume cuts it
        return parse_log(log.read_bytes(), str(log))


def where_it_stopped(log: Path | None) -> tuple[str | None, bool, str | None]:
    """(session id to resume, whether its input was recorded, how its last input ended):
    (None, False, None) with no log yet; (id, False, None) when it was cut before the input was
    recorded; (id, True, None) when an input was cut off; (id, True, reason) when it ended."""
    if log is None:
        return None, False, None
    session_id = log.name.removesuffix(".jsonl")
    events = _events(log)
    inputs = [e.line for e in events if e.kind == "user_input"]
    if not inputs:
        return session_id, False, None
    ends = [e for e in events if e.kind == "session_end" and e.data.get("state") != "closed" and e.line > inputs[-1]]
    return session_id, True, (str(ends[-1].data.get("reason", "completed")) if ends else None)


def usage_of(log: Path | None) -> tuple[dict[str, int], float | None, str]:
    """Tokens of every model call of the log, their cost at list price (None: the model has
    no price in the catalog) and the model's id."""
    usage = {"input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0, "model_calls": 0}
    if log is None:
        return usage, 0.0, ""
    from codeloop.agent.budget import charge_of, price_of
    from codeloop.llm.types import Usage

    events = _events(log)
    start = next((e for e in events if e.kind == "session_start"), None)
    model = str(start.data.get("model", "")) if start else ""
    for event in events:
        if event.kind == "assistant_text_end":
            usage["model_calls"] += 1
            for key in ("input_tokens", "output_tokens", "cache_read_tokens"):
                usage[key] += int(event.data.get(key) or 0)
    price = price_of(model) if model else None
    if price is None:
        return usage, (0.0 if usage["model_calls"] == 0 else None), model
    cost = charge_of(Usage(input_tokens=usage["input_tokens"], output_tokens=usage["output_tokens"],
                           cache_read_tokens=usage["cache_read_tokens"]), None, price)
    return usage, float(cost), model


def _write_result(dirs: TaskDirs, result: dict[str, Any]) -> None:
    atomic_write(dirs.root / "result.json", json.dumps(result).encode("utf-8"))


def finished_result(dirs: TaskDirs) -> dict[str, Any] | None:
    """The result a worker wrote before the batch could record it; None when there is none."""
    try:
        result = json.loads((dirs.root / "result.json").read_text("utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(result, dict) or result.get("status") == "budget":
        return None  # paused by a cost limit: run again (it goes on, or stops again at once)
    return result


@contextlib.contextmanager
def _task_lock(dirs: TaskDirs) -> Any:
    dirs.root.mkdir(parents=True, exist_ok=True)
    with open(dirs.root / "lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # released when this process ends, however it ends
        yield


def run_batch_task(task: TaskSpec, options: BatchOptions, cost_cap: float | None = None,
                   store: LogStore | None = None) -> dict[str, Any]:
    """Run ``task`` to its end and return its result line (never raises for the task's own
    failures: they are its ``status`` and ``error``). ``cost_cap`` is what the batch's
    ``--max-cost`` leaves this task; ``store`` mirrors its log (Ray)."""
    dirs = TaskDirs(node_work_dir(options) / task.id)
    with _task_lock(dirs):
        done = finished_result(dirs)
        if done is not None:
            return done
        started = time.monotonic()
        result = asyncio.run(_run(task, options, dirs, cost_cap, store))
        result["seconds"] = round(time.monotonic() - started, 3)
        _write_result(dirs, result)
        return result


async def _run(task: TaskSpec, options: BatchOptions, dirs: TaskDirs, cost_cap: float | None,
               store: LogStore | None) -> dict[str, Any]:
    result: dict[str, Any] = {"id": task.id, "status": "failed", "check": None, "patch": "", "error": None,
                              "workspace": str(dirs.workspace), "node": os.uname().nodename}
    timing = result["timing"] = {"prepare": 0.0, "session": 0.0, "check": 0.0, "patch": 0.0}
    clock = time.monotonic()

    def lap(phase: str) -> None:
        nonlocal clock
        now = time.monotonic()
        timing[phase] = round(timing[phase] + now - clock, 3)
        clock = now

    restored = await asyncio.to_thread(store.restore, task.id) if store is not None else None
    mirror: LogMirror | None = None
    try:
        local = session_logs(dirs)
        if restored is not None and (not local or local[0].stat().st_size < len(restored.data)):
            # Run elsewhere since this node last had it (or never here): the keeper's copy is newer.
            await _restore(dirs, task, options, restored)
        else:
            await prepare_workspace(dirs, task.source(Path(options.tasks_dir)))
        os.environ["CODELOOP_STATE_DIR"] = str(dirs.state)
        if store is not None:
            mirror = LogMirror(task.id, dirs.state / "sessions", store,
                               lambda: asyncio.run(workspace_patch(dirs)))
            mirror.start(restored)
        lap("prepare")
        try:
            status = await asyncio.wait_for(_session(task, options, dirs, cost_cap), task.timeout)
        except TimeoutError:
            status = "timeout"
        result["status"] = status
        lap("session")
        if task.check is not None:
            result["check"] = await _check(task.check, dirs, options)
            lap("check")
    except TaskWorkspaceError as exc:
        result["error"] = str(exc)
    except Exception as exc:  # a configuration found late (adapter, sandbox, MCP): the task's error
        result["error"] = f"{type(exc).__name__}: {exc}"
    finally:
        if mirror is not None:
            await asyncio.to_thread(mirror.stop)
    clock = time.monotonic()
    with contextlib.suppress(TaskWorkspaceError):
        result["patch"] = await workspace_patch(dirs) if dirs.prepared else ""
    lap("patch")
    logs = session_logs(dirs)
    log = logs[0] if logs else None
    result["usage"], result["cost_usd"], result["model"] = usage_of(log)
    result["session_log"] = str(log) if log else None
    return result


async def _restore(dirs: TaskDirs, task: TaskSpec, options: BatchOptions, restored: MirroredLog) -> None:
    """A task retried on this node: its workspace made again and replayed to the patch its log
    reached, and the log as the store holds it."""
    import shutil

    (dirs.root / "prepared").unlink(missing_ok=True)  # made again from the source, then the patch
    if dirs.state.exists():
        shutil.rmtree(dirs.state)
    await prepare_workspace(dirs, task.source(Path(options.tasks_dir)))
    await apply_patch(dirs, restored.patch)
    sessions = dirs.state / "sessions"
    sessions.mkdir(parents=True, mode=0o700)
    (sessions / restored.name).write_bytes(restored.data)


async def _session(task: TaskSpec, options: BatchOptions, dirs: TaskDirs, cost_cap: float | None) -> str:
    """The task's session, new or resumed from its log; how its input ended."""
    from rich.console import Console

    from codeloop.cli.commands import prepare
    from codeloop.cli.run import run_task, settle_options
    from codeloop.cli.run_terminal import Renderer

    logs = session_logs(dirs)
    resume, has_input, ended = where_it_stopped(logs[0] if logs else None)
    if ended is not None and ended != "budget":
        return ended  # a budget pause goes on: the batch's --max-cost may leave it more now
    with open(dirs.root / "stderr.log", "a", encoding="utf-8") as err_file:  # noqa: ASYNC230 - the task's own log, once
        err = Console(file=err_file, soft_wrap=True, no_color=True, width=120)
        flags = {**options.flags, **{k: v for k, v in task.model.model_dump().items() if v is not None},
                 **{k: v for k, v in task.limits.model_dump().items() if v is not None}}
        if cost_cap is not None:
            flags["max_cost"] = min(cost_cap, flags.get("max_cost", cost_cap))
        for name in ("max_turns", "max_retries", "diagnostics", "rescues", "strategy", "model_file", "candidates",
                     "gpu_layers", "max_tokens", "max_time", "max_cost", "model", "provider", "profile",
                     "base_url", "sandbox", "approval"):
            flags.setdefault(name, None)
        flags["approval"] = flags["approval"] or "never-ask"
        settings = settle_options(dirs.workspace, flags, options.network, err)
        renderer = Renderer("quiet", Console(file=err_file, no_color=True), err)
        prompt = None if has_input else prepare(task.instruction, dirs.workspace, settings.choice)

        async def nobody_answers(entry: Any, store: Any) -> None:
            store.decide(entry.id, "deny", "codeloop batch", NOBODY_ANSWERS)

        reason, _, _ = await run_task(prompt, settings, resume, renderer, err, ask_client=nobody_answers, steer=False)
        return reason


async def _check(command: str, dirs: TaskDirs, options: BatchOptions) -> dict[str, Any]:
    """The task's check command, a ``shell`` call through a pipeline in the task's sandbox."""
    from codeloop.tools.call_path import build_pipeline, open_environment, settle_sandbox
    from codeloop.tools.outcomes import CommandOutcome
    from codeloop.tools.registry import ToolRegistry
    from codeloop.tools.shell import MAX_SHELL_TIMEOUT_MS, shell_tool

    box = settle_sandbox(options.flags.get("sandbox"), options.network, default="workspace-write")
    env = open_environment(dirs.workspace, sandbox=box.mode, network=box.network)
    await env.initialize()
    try:
        shell = shell_tool()
        from codeloop.tools.call_path import PipelineCall

        outcome = await build_pipeline(ToolRegistry.of([shell]), env).run(
            PipelineCall(shell.name, {"command": command, "timeout_ms": MAX_SHELL_TIMEOUT_MS}))
    finally:
        await env.cleanup()
    run = outcome.data
    if not isinstance(run, CommandOutcome):
        return {"command": command, "passed": False, "exit_code": None, "status": "not_run",
                "output": outcome.output[-CHECK_OUTPUT_CHARS:]}
    return {"command": command, "passed": run.status == "ok", "exit_code": run.exit_code, "status": run.status,
            "output": run.result.output[-CHECK_OUTPUT_CHARS:]}
