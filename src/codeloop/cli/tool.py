"""``codeloop apply-patch`` and ``codeloop tool``: one patch, or one tool call, from a shell.

Imports happen inside the commands so other ``codeloop`` commands start fast. Both run
through the same code a model's call uses (``apply_patch_text`` and the
registry pipeline), in a workspace given by ``--cwd``. Errors are one clear line on
stderr and exit status 1, never a traceback.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import typer

from codeloop.cli.errors import fail

if TYPE_CHECKING:
    from codeloop.environments.base import ExecutionEnvironment
    from codeloop.tools.hooks import Hook
    from codeloop.tools.registry import ToolCallOutcome

T = TypeVar("T")


def _workspace(cwd: Path) -> Path:
    root = cwd.expanduser()
    if not root.is_dir():
        raise fail(f"--cwd {cwd}: not a directory. Pass an existing workspace directory.")
    return root.resolve()


def _read_patch(source: str) -> str:
    if source == "-":
        return sys.stdin.read()
    try:
        return Path(source).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise fail(f"patch file {source}: not found. Pass a patch file path, or - to read stdin.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise fail(f"patch file {source}: cannot read it ({exc}).") from None


async def _with_env(env: ExecutionEnvironment, work: Awaitable[T]) -> T:
    await env.initialize()
    try:
        return await work
    finally:
        await env.cleanup()


def apply_patch_command(
    patch_file: str = typer.Argument("-", metavar="[FILE|-]", help="Patch file, or - for stdin."),
    cwd: Path = typer.Option(Path("."), "--cwd", help="Workspace root the patch paths are relative to."),
    partial: bool = typer.Option(
        False,
        "--partial",
        help="Write hunk by hunk like codex's standalone binary: a failure leaves the earlier hunks applied.",
    ),
) -> None:
    """Apply a v4a patch: every file of it, or none. Example: codeloop apply-patch --cwd repo fix.patch"""
    import asyncio

    from codeloop.environments.errors import WorkspaceError
    from codeloop.tools.apply_patch import apply_patch_text
    from codeloop.tools.call_path import open_environment
    from codeloop.tools.errors import PatchError

    root = _workspace(cwd)
    text = _read_patch(patch_file)

    env = open_environment(root, sandbox="off", network=True)
    try:
        outcome = asyncio.run(_with_env(env, apply_patch_text(env, text, partial=partial)))
    except (PatchError, WorkspaceError) as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(1) from None
    except Exception as exc:
        raise fail(f"apply-patch failed unexpectedly: {type(exc).__name__}: {exc}") from None
    typer.echo(outcome.summary(), nl=False)


def tool_command(
    name: str = typer.Argument(..., help="Tool name (read_file, write_file, edit_file, apply_patch, shell, grep, glob, read_many_files, list_dir)."),
    args: str = typer.Option("{}", "--args", help="Arguments as a JSON object."),
    cwd: Path = typer.Option(Path("."), "--cwd", help="Workspace root."),
    as_json: bool = typer.Option(False, "--json", help="Print {\"output\", \"full_output_chars\", \"is_error\"}."),
    sandbox: str | None = typer.Option(
        None, "--sandbox",
        help="read-only | workspace-write | off (no sandbox; full: its deprecated name). Default: the config's, else off."),
    network: str | None = typer.Option(
        None, "--network",
        help="on | off (default: on with --sandbox off, else off). off holds in every mode, or the call is refused."),
    approval: str | None = typer.Option(
        None, "--approval",
        help="never-ask, on-risk (default) or always-ask, as for codeloop run; without a terminal a call that "
             "needs approval is refused."),
    approval_from: str | None = typer.Option(
        None, "--approval-from",
        help="terminal (default with a terminal): ask there, and take an answer given with codeloop approvals "
             "too; store: wait for codeloop approvals approve|deny ID (from any shell)."),
) -> None:
    """Run one tool through the full pipeline, as a model's call would: the configured policy,
    approval mode, hooks and the repository's trust gate included.

    Example: codeloop tool read_file --args '{"file_path": "README.md"}' --cwd repo
    """
    import asyncio

    from codeloop.config import ConfigError, load_config
    from codeloop.environments.errors import SandboxUnavailableError, WorkspaceError
    from codeloop.policy import APPROVAL_MODES
    from codeloop.tools.call_path import SandboxOptionError, open_environment, settle_sandbox

    root = _workspace(cwd)
    try:  # the project's config counts only as far as the user trusts it (codeloop trust)
        config = load_config(root)
    except ConfigError as exc:
        raise fail(str(exc)) from None
    for warning in config.warnings:
        typer.echo(f"warning: {warning}", err=True)
    mode = approval or config.approval or "on-risk"
    if mode not in APPROVAL_MODES:
        raise fail(f"unknown --approval {mode!r}: use one of {', '.join(APPROVAL_MODES)}")
    if approval_from not in (None, "terminal", "store"):
        raise fail(f"unknown --approval-from {approval_from!r}: use terminal or store")
    try:  # the rules of codeloop.environments.factory; a refusal is one line and exit 1
        box = settle_sandbox(sandbox or config.sandbox or "off", network, default="off")
    except (SandboxOptionError, SandboxUnavailableError) as exc:
        raise fail(str(exc)) from None
    if box.warning is not None:
        typer.echo(f"warning: {box.warning}", err=True)
    env = open_environment(root, sandbox=box.mode, network=box.network)
    try:
        result = asyncio.run(_with_env(env, _run_tool(name, args, env, root, mode, config.hooks, approval_from or "terminal")))
    except WorkspaceError as exc:
        raise fail(str(exc)) from None
    except Exception as exc:
        raise fail(f"tool {name} could not run: {type(exc).__name__}: {exc}") from None
    if as_json:
        fields = ("output", "full_output_chars", "is_error")
        typer.echo(json.dumps({key: getattr(result, key) for key in fields}, ensure_ascii=False))
    else:
        output = result.output
        typer.echo(output, err=result.is_error, nl=not output.endswith("\n"))
    if result.is_error:
        raise typer.Exit(1)


async def _run_tool(name: str, args: str, env: ExecutionEnvironment, root: Path, mode: str,
                    hooks: tuple[Hook, ...], approval_from: str) -> ToolCallOutcome:
    """The one call, through this face's pipeline: ``codeloop run``'s approval policy with the
    trusted hooks around it; an ask waits in the pending store, answered on the terminal
    (``approval_from`` terminal) or by ``codeloop approvals`` from any shell."""
    import uuid

    from rich.console import Console

    from codeloop.cli.run_terminal import Terminal
    from codeloop.policy import ApprovalStore, approval_policy, remembering
    from codeloop.policy.pending import SqlitePendingStore
    from codeloop.sessions.state_dir import approvals_db_path
    from codeloop.tools.call_path import PipelineCall, build_pipeline
    from codeloop.tools.hooks import Hooks
    from codeloop.tools.sets import all_tools_registry
    from codeloop.tools.tool_events import ToolCallPending, ToolEvent

    err = Console(stderr=True)
    terminal = Terminal(err)
    terminal.start()
    remembered = ApprovalStore(root)
    if remembered.warning:
        typer.echo(f"warning: {remembered.warning}", err=True)

    def warn(message: str) -> None:
        typer.echo(f"warning: {message}", err=True)

    asked = []

    def announce(event: ToolEvent) -> None:
        if isinstance(event, ToolCallPending):
            asked.append(event.entry)
        if isinstance(event, ToolCallPending) and approval_from == "store":
            typer.echo(f"waiting for approval: {event.entry.summary(200)} ({event.entry.reason}); answer with "
                       f"codeloop approvals approve|deny {event.entry.id}", err=True)

    session = f"tool-{uuid.uuid4().hex[:12]}"
    pending = SqlitePendingStore(approvals_db_path())
    pipeline = build_pipeline(
        all_tools_registry(), env, policy=approval_policy(mode, remembered), hooks=Hooks(hooks, root),
        hook_warning=warn, session_id=session, events=announce, pending=pending, face="tool", wait_for_answer=True,
        ask_client=terminal.client() if approval_from == "terminal" else None, remember=remembering(remembered, warn))
    try:
        return await pipeline.run(PipelineCall(name, args))
    finally:
        terminal.stop()
        if asked:  # (a call that never asked leaves the store untouched)
            pending.withdraw(session, "codeloop tool ended")


def register(app: typer.Typer) -> None:
    """Add ``apply-patch`` and ``tool`` to the main app."""
    app.command("apply-patch")(apply_patch_command)
    app.command("tool")(tool_command)
