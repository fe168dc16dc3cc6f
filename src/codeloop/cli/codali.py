"""``codeloop codali``: answer agent requests from the local index (docs/codali.md)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from codeloop.codali.answer import answer_request_sync
from codeloop.codali.request import AgentRequestError, parse_agent_request
from codeloop.codali.response import dumps

codali_app = typer.Typer(
    name="codali",
    help="Context broker for stateless agents (AGENT_REQUEST v1 → CODALI_RESPONSE v1). "
         "Example: codeloop codali answer --repo . reply.txt",
    no_args_is_help=True,
)


def _fail(message: str) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(1)


@codali_app.command("answer")
def answer(
    source: Annotated[str, typer.Argument(help="File holding the agent's reply, or - for stdin.")] = "-",
    repo: Annotated[Path, typer.Option("--repo", help="Repository root.")] = Path("."),
    budget: Annotated[int | None, typer.Option(min=0, help="Most characters of file content in the response.")]
    = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the response as JSON.")] = False,
) -> None:
    """Read one reply holding an AGENT_REQUEST v1, print the CODALI_RESPONSE v1.
    Example: codeloop codali answer --repo . reply.txt"""
    if not repo.is_dir():
        raise _fail(f"--repo {repo} is not a directory; pass the repository root")
    if source == "-":
        text = sys.stdin.read()
    else:
        try:
            text = Path(source).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            message = f"cannot read {source}: {exc.__class__.__name__}: {exc}; pass a UTF-8 text file or -"
            raise _fail(message) from None
    try:
        request = parse_agent_request(text)
    except AgentRequestError as exc:
        raise _fail(f"{exc} (in {'stdin' if source == '-' else source})") from None
    response = answer_request_sync(request, repo, content_budget=budget)
    typer.echo(dumps(response, json_out), nl=False)


def register(app: typer.Typer) -> None:
    """Add ``codeloop codali ...`` to the main app."""
    app.add_typer(codali_app, name="codali")
