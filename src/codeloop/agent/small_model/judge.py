"""Judging one candidate change by the checks found in the workspace (issue 33).

The checks read here (:func:`~.checks.parse_checks`, :func:`~.checks.import_checks`) need no
sandbox. The others are commands, and each runs as a ``shell`` call through the one tool
pipeline (policy, approval, events, truncation), in the environment given: a
:class:`~codeloop.environments.scratch.ScratchExecutionEnvironment` holding the candidate, so
they never touch the user's files; network off there. A check the policy denies, or the user
does not approve, did not pass, and says why. Where no sandbox can run, the caller passes the
policy that asks the user like any command (one "always" answer can cover the session's checks).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from codeloop.agent.small_model.checks import (
    Check,
    CheckResult,
    command_checks,
    import_checks,
    parse_checks,
    script_check,
)
from codeloop.environments.base import ExecutionEnvironment
from codeloop.policy.approval import ToolPolicy
from codeloop.tools.call_path import Approvals, PipelineCall, build_pipeline
from codeloop.tools.registry import ToolRegistry
from codeloop.tools.shell import SHELL, shell_tool
from codeloop.tools.tool_events import ToolEventSink

CHECK_TIMEOUT_MS = 60_000
"""How long one check command may run."""


async def run_command_checks(env: ExecutionEnvironment, checks: Sequence[Check], *,
                             policy: ToolPolicy | None = None, approvals: Approvals | None = None,
                             timeout_ms: int = CHECK_TIMEOUT_MS,
                             on_event: ToolEventSink | None = None) -> list[CheckResult]:
    """Run each check's command as a ``shell`` call through the pipeline in ``env``; a check
    passes when its command exits 0 within ``timeout_ms``."""
    pipeline = build_pipeline(ToolRegistry.of([shell_tool(timeout_ms)]), env, policy=policy, approvals=approvals,
                              events=on_event)
    results = []
    for check in checks:
        if check.command is None:
            continue
        outcome = await pipeline.run(PipelineCall(SHELL, {"command": check.command, "timeout_ms": timeout_ms}))
        results.append(CheckResult(check, not outcome.is_error, outcome.output if outcome.is_error else ""))
    return results


async def judge(env: ExecutionEnvironment, before: Mapping[str, str], changes: Mapping[str, str | None],
                ran: Sequence[str] = (), *, policy: ToolPolicy | None = None, approvals: Approvals | None = None,
                timeout_ms: int = CHECK_TIMEOUT_MS, on_event: ToolEventSink | None = None,
                scripts: Sequence[str] = ()) -> list[CheckResult]:
    """Every check of a candidate: ``before`` is the project's files (path → text),
    ``changes`` the candidate's (path → new text, None: deleted), already staged in ``env``;
    ``ran`` the commands this session ran successfully; ``scripts`` the affected scripts that
    ran cleanly before the change (:func:`~.checks.affected_scripts`). The commands run as in
    :func:`run_command_checks`."""
    after = {path: text for path, text in {**before, **changes}.items() if text is not None}
    results = parse_checks(changes) + import_checks(after, changes)
    checks = command_checks(before, after, changes, ran)
    commands = {c.command for c in checks}
    checks += [c for c in map(script_check, scripts) if c.command not in commands]
    return results + await run_command_checks(env, checks, policy=policy, approvals=approvals,
                                              timeout_ms=timeout_ms, on_event=on_event)
