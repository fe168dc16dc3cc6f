"""``codeloop batch TASKS.jsonl``: many tasks at once, on this machine or a Ray cluster (issue 39).

The tasks file is validated first (``batch/tasks.py``): every problem is one line naming the
line and the field, and nothing starts (exit 2). Each task then runs as an ordinary session
(``cli/batch_task.py``, ``codeloop run``'s Runner) in a pool of ``--workers`` processes
(``batch/pool.py``) or as Ray tasks (``--ray ADDRESS``, ``batch/ray_cluster.py``), and each
finished task is one line of the results file (``batch/results.py``). A restart skips the
finished ids and resumes the others from their session logs. docs/scale.md, "Batch".

Exit codes: 0 every task finished (whatever its status), 1 a task was lost (run again to
resume it), 2 bad usage or a bad tasks file, 3 ``--max-cost`` was reached with tasks left,
130 interrupted (run again to resume).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import typer

from codeloop.cli.model_choice import UsageError

EXIT_LOST, EXIT_USAGE, EXIT_BUDGET, EXIT_INTERRUPTED = 1, 2, 3, 130


def default_results(tasks: Path) -> Path:
    """``runs/tasks.jsonl`` -> ``runs/tasks.results.jsonl``."""
    return tasks.with_name(tasks.name.removesuffix(".jsonl") + ".results.jsonl")


def shared_local_model(choice: Any, workers: int) -> Any:
    """The embedded model's server as the batch needs it: one server with a slot per worker
    (``llama_server.ServedModel.parallel``), which every worker's session then finds running."""
    import dataclasses

    from codeloop.cli.model_choice import served_model

    return dataclasses.replace(served_model(choice), parallel=workers)


def _check_model_settings(tasks: list[Any], flags: dict[str, Any], max_cost: float | None) -> list[Any]:
    """Each distinct model setting of the tasks chosen as ``codeloop run`` would (UsageError
    before anything starts: an unknown provider, a model with no price under ``--max-cost``)."""
    from codeloop.cli.model_choice import choose_model
    from codeloop.cli.run import settle_limits

    choices = []
    seen: set[tuple[Any, ...]] = set()
    for task in tasks:
        merged = {**flags, **{k: v for k, v in task.model.model_dump().items() if v is not None}}
        key = (merged.get("provider"), merged.get("profile"), merged.get("model"), merged.get("base_url"))
        if key in seen:
            continue
        seen.add(key)
        try:
            choice = choose_model(*key, dict(os.environ), None, None)
        except UsageError as exc:
            raise UsageError(f"task {task.id}: {exc}") from None
        if max_cost is not None:
            settle_limits({"max_cost": max_cost}, choice)
        choices.append(choice)
    return choices


class Display:
    """Progress on stderr (rich: counts, ETA) or events on stdout (``--json``)."""

    def __init__(self, json_out: bool, total: int, skipped: int) -> None:
        self.json_out = json_out
        self.progress: Any = None
        self.statuses: dict[str, int] = {}
        self.events: Any = None
        if json_out:
            # Only events go to stdout: what libraries print there (Ray's notes on retried
            # tasks) goes to stderr instead.
            sys.stdout.flush()
            self.events = os.fdopen(os.dup(1), "w", encoding="utf-8")
            os.dup2(2, 1)
        else:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self.progress = Progress(TextColumn("batch"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                                     TextColumn("ETA"), TimeRemainingColumn(), TextColumn("{task.description}"),
                                     console=Console(stderr=True), transient=False)
            self.bar = self.progress.add_task("", total=total, completed=skipped)
            self.progress.start()

    def __call__(self, kind: str, data: dict[str, Any]) -> None:
        if self.json_out:
            if kind != "tick":
                self.events.write(json.dumps({"event": kind, "time": round(time.time(), 3), **data}) + "\n")
                self.events.flush()
            return
        if kind == "task_finished":
            status = str(data.get("status"))
            self.statuses[status] = self.statuses.get(status, 0) + 1
            self.progress.advance(self.bar)
            self.progress.update(self.bar, description=" ".join(f"{k} {v}" for k, v in sorted(self.statuses.items())))
        elif kind in ("task_lost", "task_paused"):
            self.progress.console.print(f"{data['id']}: {kind.removeprefix('task_')} {data.get('error', '')}",
                                        markup=False, highlight=False)

    def stop(self) -> None:
        if self.progress is not None:
            self.progress.stop()


def register(app: typer.Typer) -> None:
    """Add ``codeloop batch``."""

    @app.command("batch")
    def batch(
        tasks_file: Path = typer.Argument(..., metavar="TASKS.jsonl", help="One task per line (docs/scale.md, Batch)."),
        results: Path | None = typer.Option(None, "--results", metavar="FILE",
                                            help="Results, one JSON line per finished task (default: "
                                                 "TASKS.results.jsonl beside the tasks file)."),
        work_dir: Path | None = typer.Option(
            None, "--work-dir", metavar="DIR",
            help="Tasks' workspaces and session logs, DIR/<id>/ (default: RESULTS.work/ here; with --ray each "
                 "node's own CODELOOP_BATCH_WORK_DIR)."),
        workers: int | None = typer.Option(None, "--workers", min=1, max=1024,
                                           help="Tasks at once (default 1 here; with --ray: the cluster's CPUs)."),
        ray_address: str | None = typer.Option(None, "--ray", metavar="ADDRESS",
                                               help="Run on this Ray cluster (host:port, or auto)."),
        ray_cpus: float = typer.Option(1.0, "--ray-cpus", min=0.0, help="CPUs Ray reserves per task."),
        ray_retries: int = typer.Option(3, "--ray-retries", min=0, max=100,
                                        help="Times a task lost with its worker or node runs again."),
        json_out: bool = typer.Option(False, "--json", help="One JSON event per line on stdout."),
        model: str | None = typer.Option(None, "--model", help="Model id for tasks that name none."),
        provider: str | None = typer.Option(None, "--provider", help="openai, anthropic, gemini or openai_compatible."),
        profile: str | None = typer.Option(None, "--profile", help="openai, anthropic, gemini or text."),
        base_url: str | None = typer.Option(None, "--base-url", help="API root, e.g. http://127.0.0.1:8080/v1."),
        sandbox: str | None = typer.Option(None, "--sandbox", help="read-only, workspace-write (default) or off."),
        network: str | None = typer.Option(None, "--network", help="on or off for commands."),
        approval: str | None = typer.Option(
            None, "--approval", help="never-ask (default: nobody answers in a batch), on-risk or always-ask "
                                     "(asked calls are then denied)."),
        max_turns: int | None = typer.Option(None, "--max-turns", min=0, max=1_000_000,
                                             help="Turn limit of each task that sets none."),
        max_cost: float | None = typer.Option(None, "--max-cost", min=0.0, metavar="USD",
                                              help="Total list-price cost of all tasks together."),
    ) -> None:
        """Run many tasks, each an ordinary codeloop session, and write one result line per task.

        Example (tasks.jsonl, one JSON object per line):

        \b
          {"id": "t1", "instruction": "make the tests pass", "workspace": {"git": "repo", "revision": "main"},
           "check": "python -m pytest -q"}
          codeloop batch tasks.jsonl --workers 4
          codeloop batch tasks.jsonl --ray 10.0.0.5:6379 --max-cost 20

        Run it again after a crash or Ctrl-C: finished tasks are skipped, the others resume from
        their session logs.

        Exit codes: 0 every task finished, 1 a task was lost (run again), 2 bad usage or tasks
        file, 3 --max-cost reached with tasks left, 130 interrupted.
        """
        from rich.console import Console

        from codeloop.batch.tasks import TaskFileError, load_tasks

        err = Console(stderr=True, soft_wrap=True, highlight=False)
        try:
            tasks = load_tasks(tasks_file)
        except TaskFileError as exc:
            for problem in exc.problems:
                err.print(f"{tasks_file}: {problem}", markup=False)
            raise typer.Exit(EXIT_USAGE) from None
        flags = {"model": model, "provider": provider, "profile": profile, "base_url": base_url, "sandbox": sandbox,
                 "approval": approval, "max_turns": max_turns}
        results_path = (results or default_results(tasks_file)).resolve()
        try:
            if approval not in (None, "never-ask", "on-risk", "always-ask"):
                raise UsageError(f"unknown --approval {approval!r}: use never-ask, on-risk or always-ask")
            if network not in (None, "on", "off"):
                raise UsageError(f"unknown --network {network!r}: use on or off")
            choices = _check_model_settings(tasks, flags, max_cost)
        except UsageError as exc:
            err.print(f"error: {exc}", markup=False)
            raise typer.Exit(EXIT_USAGE) from None
        code = _run(tasks, tasks_file, results_path, work_dir, workers, ray_address, ray_cpus, ray_retries,
                    json_out, flags, network, max_cost, choices, err)
        raise typer.Exit(code)


def _run(tasks: list[Any], tasks_file: Path, results_path: Path, work_dir: Path | None, workers: int | None,
         ray_address: str | None, ray_cpus: float, ray_retries: int, json_out: bool, flags: dict[str, Any],
         network: str | None, max_cost: float | None, choices: list[Any], err: Any) -> int:
    from codeloop.batch.driver import Tally, run_tasks
    from codeloop.batch.results import ResultsWriter, read_results
    from codeloop.cli.batch_task import BatchOptions, batch_key, run_batch_task

    finished = read_results(results_path)
    todo = [task for task in tasks if task.id not in finished]
    if ray_address is None and work_dir is None:
        work_dir = results_path.with_name(results_path.name.removesuffix(".jsonl") + ".work")
    options = BatchOptions(str(tasks_file.resolve().parent), None if work_dir is None else str(work_dir.resolve()),
                           {k: v for k, v in flags.items() if v is not None}, network, batch_key(results_path))
    display = Display(json_out, len(tasks), len(tasks) - len(todo))
    display("batch_started", {"tasks": len(tasks), "finished_before": len(tasks) - len(todo),
                              "results": str(results_path), "ray": ray_address})
    tally = Tally(len(todo))
    executor: Any = None
    writer = ResultsWriter(results_path)
    try:
        if ray_address is not None:
            from codeloop.batch.ray_cluster import RayCluster, RayUnavailableError

            try:
                executor = RayCluster(ray_address, run_batch_task, options, num_cpus=ray_cpus, max_retries=ray_retries,
                                      workers=workers,
                                      mirror_dir=results_path.with_name(results_path.name.removesuffix(".jsonl")
                                                                        + ".logs").resolve())
            except RayUnavailableError as exc:
                display.stop()
                err.print(f"error: {exc}", markup=False)
                return EXIT_USAGE
        else:
            count = workers or 1
            local = [choice for choice in choices if choice.local]
            if local and todo:
                from codeloop.llm.llama_server import serving

                err.print(f"starting the local model with {count} slots (one per worker)")
                for choice in local:
                    serving(shared_local_model(choice, count))
            from codeloop.batch.pool import LocalPool

            executor = LocalPool(run_batch_task, options, count)
        run_tasks(todo, executor, writer, tally, display, max_cost)
    except KeyboardInterrupt:
        display.stop()
        writer.close()
        err.print("interrupted: run the same command again to resume", markup=False)
        os._exit(EXIT_INTERRUPTED)  # the pool's workers die with this process (each watches it through a pidfd)
    finally:
        display.stop()
    writer.close()
    if executor is not None:
        executor.close()
    display("batch_finished", {"finished": tally.done, "statuses": tally.statuses, "lost": tally.lost,
                               "paused": tally.paused, "not_started": tally.not_started,
                               "cost_usd": round(tally.cost, 6)})
    if not json_out:
        err.print(f"{tally.done} of {len(todo)} tasks finished "
                  f"({', '.join(f'{k} {v}' for k, v in sorted(tally.statuses.items())) or 'none'}); "
                  f"results: {results_path}", markup=False)
    if tally.lost:
        err.print(f"lost: {', '.join(tally.lost)} (run again to resume them)", markup=False)
        return EXIT_LOST
    if tally.paused or tally.not_started:
        err.print(f"--max-cost reached: {len(tally.paused)} paused, {tally.not_started} not started "
                  "(run again with a higher --max-cost to go on)", markup=False)
        return EXIT_BUDGET
    return 0
