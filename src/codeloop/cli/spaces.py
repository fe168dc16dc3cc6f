"""``codeloop spaces``: run operations messages locally, serve the HTTP API, manage API keys."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import typer

from codeloop.cli.app import command_group
from codeloop.cli.errors import fail

spaces_app = command_group("spaces", "JSON operations/events runtime. "
                                     "Example: codeloop spaces exec --workspace ./ws ops.json")
keys_app = command_group("keys",
                         "API keys of the spaces server. Example: codeloop spaces keys create --name ci")
spaces_app.add_typer(keys_app)


def _load_json(source: str, what: str) -> Any:
    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    except OSError as exc:
        raise fail(f"cannot read {what} {source!r}: {exc.strerror or exc}; pass an existing file or - for stdin",
                   2) from None
    except UnicodeDecodeError:
        raise fail(f"{what} {source!r} is not UTF-8 text", 2) from None
    from codeloop.policy.input_limits import InputLimitError, loads_limited

    try:
        return loads_limited(text, f"{what} {source!r}")
    except InputLimitError as exc:
        raise fail(str(exc), 2) from None
    except json.JSONDecodeError as exc:
        message = f"{what} {source!r} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        raise fail(message, 2) from None
    except ValueError as exc:  # what the server answers with 400 as well
        raise fail(f"{what} {source!r} is not valid JSON: {exc}", 2) from None


@spaces_app.command("exec")
def exec_command(
    source: str = typer.Argument("-", help="Operations message file, or - for stdin."),
    workspace: Path = typer.Option(..., "--workspace", "-w", help="Workspace directory (created if missing)."),
    policy: str = typer.Option("standard", "--policy", help="Preset: restrictive, standard or permissive."),
    policy_file: Path | None = typer.Option(None, "--policy-file", help="JSON policy: preset plus overrides."),
    approve: list[str] = typer.Option([], "--approve", help="Operation id to approve when it asks (repeatable)."),
    no_sandbox: bool = typer.Option(False, "--no-sandbox", help="Do not use bubblewrap even when available."),
) -> None:
    """Execute one operations message in WORKSPACE and print the events message (JSON).

    Example: echo '{"protocolVersion":"1.0","operations":[{"type":"shell","command":"ls"}]}' | codeloop spaces exec -w ./ws -
    """
    import asyncio

    from codeloop.spaces.policy_config import PolicyConfigError, build_policy, run_limits
    from codeloop.spaces.runs import MessageRejectedError, parse_message

    config: Any = {"preset": policy}
    if policy_file is not None:
        config = _load_json(str(policy_file), "policy file")
    try:
        built = build_policy(config)
        limits = run_limits(config)
    except PolicyConfigError as exc:
        raise fail(f"invalid policy: {exc}", 2) from None
    raw = _load_json(source, "operations message")
    try:
        parse_message(raw)
    except MessageRejectedError as exc:
        raise fail(f"invalid operations message: {exc}", 2) from None
    if workspace.exists() and not workspace.is_dir():
        raise fail(f"--workspace {str(workspace)!r} is not a directory", 2)
    output = asyncio.run(_exec(raw, workspace, built, set(approve), not no_sandbox, limits))
    typer.echo(json.dumps(output, indent=2, ensure_ascii=False))


async def _exec(raw: Any, workspace: Path, policy: Any, approve: set[str], sandbox: bool,
                limits: Any) -> dict[str, Any]:
    from codeloop.policy.pending import SqlitePendingStore
    from codeloop.sessions.state_dir import approvals_db_path
    from codeloop.spaces.operations import Approval, events_message_to_json
    from codeloop.spaces.runs import new_run_id, run_message
    from codeloop.spaces.workspace import UNSANDBOXED_WARNING, open_environment

    space = await open_environment(workspace, policy, sandbox=sandbox)
    policy = space.policy
    if policy.unsandboxed:
        typer.echo(f"WARNING: {UNSANDBOXED_WARNING}; network-off is enforced by the command policy only "
                   "(network tools are refused, programs opening sockets are not stopped)", err=True)
    run_id = new_run_id()
    events: list[Any] = []
    store = SqlitePendingStore(approvals_db_path())  # where its asks wait, as codeloop run's do
    who = "codeloop spaces exec --approve"
    try:
        message, outcome = await run_message(raw, space.env, policy, run_id=run_id, limits=limits, pending=store)
        events += message.events
        while outcome.state == "awaiting_approval" and outcome.pending_operation_id in approve:
            approval = Approval(operationId=outcome.pending_operation_id or "", decision="approved")
            message, outcome = await run_message(raw, space.env, policy, run_id=run_id, start=outcome.cursor,
                                                 approval=approval, limits=limits, run_time_ms=outcome.run_time_ms,
                                                 pending=store, who=who)
            events += message.events
    finally:
        await space.env.cleanup()
        # Nobody answers once this process ends: what still waits is taken back.
        store.withdraw(run_id, "codeloop spaces exec ended; approve the operation with --approve ID")
    message = message.model_copy(update={"events": events})
    return events_message_to_json(message)


@spaces_app.command("serve")
def serve_command(
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on."),
    port: int = typer.Option(8787, "--port", min=1, max=65535, help="TCP port (1-65535)."),
    data_dir: Path | None = typer.Option(None, "--data-dir", help="Where workspaces and the SQLite store live."),
    database: str | None = typer.Option(None, "--database", help="postgresql://... to share a store between servers."),
    no_auth: bool = typer.Option(False, "--no-auth", help="Accept requests without an API key (loopback only)."),
    no_sandbox: bool = typer.Option(False, "--no-sandbox", help="Do not use bubblewrap even when available."),
    no_auth_on_network: bool = typer.Option(
        False, "--no-auth-on-network",
        help="With --no-auth, serve a non-loopback --host anyway: anyone who reaches the port runs commands."),
    lease_seconds: float = typer.Option(10.0, "--lease-seconds",
                                        help="How long a run's lease lasts unless renewed: the runs of a replica "
                                             "that died or stalled are taken over after this (0.5-3600)."),
) -> None:
    """Serve the spaces HTTP API and the web console at / (docs/console.md).

    Example: codeloop spaces serve --port 8787 --data-dir ./spaces-data
    """
    from codeloop.spaces.server import serve

    try:
        serve(host=host, port=port, data_dir=data_dir, database=database, no_auth=no_auth, sandbox=not no_sandbox,
              no_auth_on_network=no_auth_on_network, lease_s=lease_seconds)
    except ValueError as exc:
        raise fail(str(exc), 2) from None


@keys_app.command("create")
def keys_create(
    name: str = typer.Option("default", "--name", help="A label for the key."),
    data_dir: Path | None = typer.Option(None, "--data-dir", help="Data directory of the server."),
    database: str | None = typer.Option(None, "--database", help="postgresql://... store of the server."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Create an API key; it is printed once and stored only as a hash.

    Example: codeloop spaces keys create --name ci --data-dir ./spaces-data
    """
    from codeloop.spaces.database import open_store

    try:
        store = open_store(database, data_dir)
    except ValueError as exc:
        raise fail(str(exc), 2) from None
    try:
        key_id, secret = store.create_key(name)
    finally:
        store.close()
    if as_json:
        typer.echo(json.dumps({"id": key_id, "name": name, "key": secret}))
    else:
        typer.echo(secret)
        typer.echo(f"key {key_id} ({name}) created; keep it secret, it is not shown again.", err=True)


def register(app: typer.Typer) -> None:
    """Add ``codeloop spaces ...`` to the main app."""
    app.add_typer(spaces_app)
