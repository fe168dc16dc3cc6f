"""Background commands (issue 21): ``shell`` with ``background: true``, ``job_output``,
``job_input`` and ``job_stop``.

The processes are :class:`~codeloop.environments.runner.Job` objects (the one process
runner: same process tree, group guard and output caps as every command). A
:class:`JobTable` holds one session's jobs; the face that adds these tools
(:func:`add_job_tools`, ``codeloop run`` only, so the relay and spaces tool lists stay as
they are) calls :meth:`JobTable.kill_all` when that session ends. A job starts through
the call's environment, so it runs sandboxed exactly as a ``shell`` call would, and the
start is a ``shell`` call to the policy and approvals.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from codeloop.environments.base import BackgroundJobs, ExecutionEnvironment, background_jobs
from codeloop.environments.runner import Job
from codeloop.tools.effects import WIDEST, Effect, ToolEffects, argument_paths, reads
from codeloop.tools.registry import ToolContext, ToolOutput, ToolRegistry, make_tool
from codeloop.tools.workspace_ops import PlannedChange


@dataclass
class JobTable:
    """One session's background jobs by id (``job1``, ``job2``, ...)."""

    jobs: dict[str, tuple[Job, str, BackgroundJobs]] = field(default_factory=dict)
    started: int = 0

    def add(self, job: Job, command: str, env: BackgroundJobs) -> str:
        self.started += 1
        job_id = f"job{self.started}"
        self.jobs[job_id] = (job, command, env)
        return job_id

    def get(self, job_id: str) -> tuple[Job, str, BackgroundJobs]:
        """The job called ``job_id``; KeyError with a message naming the known ones."""
        if job_id not in self.jobs:
            known = ", ".join(self.jobs) or "none (start one with shell and background: true)"
            raise KeyError(f"no background job {job_id!r} in this session; its jobs: {known}")
        return self.jobs[job_id]

    def listing(self) -> str:
        if not self.jobs:
            return "No background jobs in this session (start one with shell and background: true)."
        return "\n".join(f"{job_id}: {status(job)}: {command}" for job_id, (job, command, _) in self.jobs.items())

    def kill_all(self) -> None:
        """SIGKILL every job's processes (the session ended)."""
        for job, _, _ in self.jobs.values():
            job.kill()


def status(job: Job) -> str:
    code = job.exit_code
    return "running" if code is None else f"exited with code {code}"


def _report(job_id: str, job: Job, env: BackgroundJobs, text: str) -> str:
    shown = env.redact(text).rstrip("\n")
    return (shown + "\n" if shown else "") + f"[{job_id} {status(job)}]"


def add_job_tools(registry: ToolRegistry, table: JobTable) -> None:
    """Give the registry's ``shell`` a ``background`` parameter and add the job tools."""
    shell = registry.get("shell")
    if shell is None:
        return
    run_in_foreground = shell.executor

    async def shell_or_job(args: dict[str, Any], env: ExecutionEnvironment, ctx: ToolContext) -> Any:
        if not args.get("background"):
            return await run_in_foreground({k: v for k, v in args.items() if k != "background"}, env, ctx)
        jobs = background_jobs(env)
        if jobs is None:
            return ToolOutput("background commands need a workspace on this machine; run it without "
                              "background", is_error=True)
        if ctx.before_change is not None:
            ctx.before_change(PlannedChange("process", command=args["command"]))
        try:
            job = jobs.start_job(args["command"])
        except OSError as exc:
            return ToolOutput(f"the command did not start: {exc.strerror or exc}", is_error=True)
        job_id = table.add(job, args["command"], jobs)
        first = await job.first_output()
        return ToolOutput(f"Started background job {job_id}. Read its new output with job_output, send it "
                          f"input with job_input, stop it with job_stop.\n{_report(job_id, job, jobs, first)}")

    schema = shell.definition.parameters
    properties = {**schema["properties"], "background": {
        "type": "boolean", "description": "Start the command and return at once with a job id (for servers "
        "and watchers); read it later with job_output, stop it with job_stop."}}
    registry.register(replace(shell, definition=replace(
        shell.definition, parameters={**schema, "properties": properties}), executor=shell_or_job))

    async def job_output(args: dict[str, Any], env: ExecutionEnvironment, ctx: ToolContext) -> ToolOutput:
        if not args.get("job_id"):
            return ToolOutput(table.listing())
        try:
            job, _, job_env = table.get(args["job_id"])
        except KeyError as exc:
            return ToolOutput(str(exc.args[0]), is_error=True)
        return ToolOutput(_report(args["job_id"], job, job_env, job.read()))

    async def job_input(args: dict[str, Any], env: ExecutionEnvironment, ctx: ToolContext) -> ToolOutput:
        try:
            job, _, job_env = table.get(args["job_id"])
            await job.write(args["text"], close=bool(args.get("close")))
        except KeyError as exc:
            return ToolOutput(str(exc.args[0]), is_error=True)
        except (BrokenPipeError, ValueError, OSError):
            return ToolOutput(f"{args['job_id']} no longer reads its input ({status(job)})", is_error=True)
        first = await job.first_output()
        return ToolOutput(_report(args["job_id"], job, job_env, first))

    async def job_stop(args: dict[str, Any], env: ExecutionEnvironment, ctx: ToolContext) -> ToolOutput:
        try:
            job, _, job_env = table.get(args["job_id"])
        except KeyError as exc:
            return ToolOutput(str(exc.args[0]), is_error=True)
        await job.stop()
        return ToolOutput(_report(args["job_id"], job, job_env, job.read()))

    job_id = {"type": "string", "description": "The id shell returned (job1, ...)."}
    # job_output only reads what a job printed; job_input feeds a running program, which may do
    # anything (the widest: it asks under on-risk, and no checkpoint covers it); job_stop signals
    # processes and names no file.
    registry.register(make_tool(
        "job_output", "New output of a background job since the last read, and whether it still runs "
        "(its exit code when done). Without job_id: the session's jobs.", {"job_id": job_id}, [], job_output,
        reads()))
    registry.register(make_tool(
        "job_input", "Send text to a background job's standard input (add \\n to end a line).",
        {"job_id": job_id, "text": {"type": "string"},
         "close": {"type": "boolean", "description": "End its input after the text (EOF)."}},
        ["job_id", "text"], job_input, WIDEST))
    registry.register(make_tool(
        "job_stop", "Stop a background job and everything it started (SIGTERM, then SIGKILL), "
        "returning its last output.", {"job_id": job_id}, ["job_id"], job_stop,
        ToolEffects(frozenset({Effect.EXEC}), argument_paths())))
