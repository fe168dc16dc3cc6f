"""``codeloop trust [DIR]``: review and trust a repository's ``.codeloop/`` settings (docs/security.md)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import typer


def _describe(value: object) -> str:
    if isinstance(value, dict):  # MCP servers: what would start, or where it connects
        return "; ".join(f"{name}: " + (server.url or shlex.join([server.command, *server.args]))
                         + (f" (env {', '.join(server.env)})" if server.env else "")
                         for name, server in value.items())
    if isinstance(value, tuple):  # hooks (each command and when it runs) or diagnostics commands
        return "; ".join(f"{item.event}: {item.command}" if hasattr(item, "event")
                         else f"after edits: {item.command}" + (f" (for {', '.join(item.paths)})" if item.paths else "")
                         for item in value)
    return json.dumps(value)


def register(app: typer.Typer) -> None:
    """Add ``codeloop trust``."""

    @app.command("trust")
    def trust_command(
        directory: Path = typer.Argument(Path("."), metavar="DIR", help="The workspace whose .codeloop/ to trust."),
        yes: bool = typer.Option(False, "--yes", "-y", help="Trust without asking (after reading the list)."),
    ) -> None:
        """Show the settings of DIR/.codeloop/ that need trust (sandbox, approval, base_url, MCP
        servers, hooks, diagnostics commands, pre-approved commands) and trust exactly this content.
        A later change asks again.

        Example: codeloop trust ~/src/app
        """
        from codeloop.config import (
            ConfigError,
            needs_trust,
            parse_config,
            project_config_path,
            read_project_file,
        )
        from codeloop.policy.approval_modes import ApprovalsFileError, parse_approvals
        from codeloop.policy.trust import content_hash, trust, trust_file

        root = directory.expanduser().resolve()
        config_path, approvals_path = project_config_path(root), root / ".codeloop" / "approvals.toml"
        found: list[tuple[Path, bytes]] = []
        lines: list[str] = []
        try:
            for path in (config_path, approvals_path):
                # Only a regular file inside the repository, read once: hashed below exactly as shown.
                raw = read_project_file(path, root)
                if raw is None:
                    continue
                found.append((path, raw))
                if path == config_path:
                    text = raw.decode("utf-8", "replace")
                    risky = needs_trust(parse_config(text, path))
                    lines += [f"  {key} = {_describe(value)}" for key, value in risky.items()]
                else:
                    lines += [f"  pre-approved command: {p}" for p in parse_approvals(raw, path)]
        except (ConfigError, ApprovalsFileError) as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from None
        except OSError as exc:
            typer.echo(f"error: cannot read {exc.filename}: {exc.strerror}", err=True)
            raise typer.Exit(2) from None
        if not found:
            typer.echo(f"nothing to trust: {root}/.codeloop/ has no config.toml or approvals.toml")
            return
        typer.echo(f"{root}/.codeloop/ asks for:")
        typer.echo("\n".join(lines) if lines else "  nothing that needs trust")
        if not yes and not typer.confirm("Trust exactly this content?", default=False):
            typer.echo("not trusted; the settings above stay ignored", err=True)
            raise typer.Exit(1)
        for path, raw in found:
            recorded = trust(path, raw, root)
            typer.echo(f"trusted {recorded} (sha256 {content_hash(raw)})")
        typer.echo(f"recorded in {trust_file()}; a change to these files asks again")
