"""``codeloop console``: the web console of this machine (issue 37, docs/console.md).

The same pages as ``codeloop spaces serve`` at ``/`` (the spaces and runs of a key), plus this
machine's ``codeloop run`` sessions and their pending calls, which only the machine owner's
key sees. That key is created on first start and kept in ``console.key`` of codeloop's state
directory (mode 0600); the console listens on loopback only, since it answers the approvals
of every session of this user.
"""

from __future__ import annotations

import os
from pathlib import Path

import typer

from codeloop.cli.errors import fail

KEY_FILE = "console.key"


def _who() -> str:
    import getpass
    import socket

    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return f"console {user}@{socket.gethostname()}"


def owner_key(store: object, path: Path) -> str:
    """The key id of the machine owner's key in ``path``, created (0600) when missing or unknown."""
    from codeloop.spaces.database import SpacesStore

    assert isinstance(store, SpacesStore)
    try:
        secret = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        secret = ""
    owner = store.key_owner(secret) if secret else None
    if owner is not None:
        return owner
    owner, secret = store.create_key("machine owner (codeloop console)")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, (secret + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    return owner


def console_command(
    port: int = typer.Option(8788, "--port", min=1, max=65535, help="TCP port on 127.0.0.1 (1-65535)."),
    host: str = typer.Option("127.0.0.1", "--host", help="A loopback address (the console refuses others)."),
    data_dir: Path | None = typer.Option(None, "--data-dir", help="The spaces data directory to show too."),
    database: str | None = typer.Option(None, "--database", help="postgresql://... spaces store to show too."),
    no_sandbox: bool = typer.Option(False, "--no-sandbox", help="Do not use bubblewrap for spaces runs."),
) -> None:
    """Serve the web console of this machine: runs, their events, and Approve / Deny.

    Example: codeloop console --port 8788   (then open http://127.0.0.1:8788/ and log in with the
    key in console.key of codeloop's state directory)
    """
    from codeloop.policy.pending import SqlitePendingStore
    from codeloop.sessions.state_dir import approvals_db_path
    from codeloop.spaces.console import LocalSessions
    from codeloop.spaces.database import open_store
    from codeloop.spaces.server import is_loopback, serve

    if not is_loopback(host):
        raise fail(f"codeloop console answers this user's approvals, so it listens on loopback only, not {host!r}; "
                   "serve a shared console with: codeloop spaces serve --host ...", 2)
    key_path = approvals_db_path().parent / KEY_FILE
    try:
        store = open_store(database, data_dir)
    except ValueError as exc:
        raise fail(str(exc), 2) from None
    try:
        owner = owner_key(store, key_path)
    finally:
        store.close()
    typer.echo(f"codeloop console on http://{host}:{port}/ — log in with the key in {key_path}", err=True)
    local = LocalSessions(owner=owner, store=SqlitePendingStore(approvals_db_path()), who=_who())
    try:
        serve(host=host, port=port, data_dir=data_dir, database=database, no_auth=False, sandbox=not no_sandbox,
              local=local)
    except ValueError as exc:
        raise fail(str(exc), 2) from None


def register(app: typer.Typer) -> None:
    """Add ``codeloop console`` to the main app."""
    app.command("console")(console_command)
