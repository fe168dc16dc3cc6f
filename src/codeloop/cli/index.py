"""``codeloop index``: build and query the local code index (docs/index.md)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from codeloop.cli.app import JsonOption, command_group
from codeloop.cli.errors import fail

if TYPE_CHECKING:
    from codeloop.index import CodeIndex

# The index (SQLite schema, tree-sitter grammars) is imported inside the commands, so that
# `codeloop --help` and the other faces do not pay for it (cold start, docs/cli.md).

T = TypeVar("T")

index_app = command_group("index", "Local code index: full-text search, symbols, import graph. "
                                   "Example: codeloop index search 'parse request'")

RepoOption = Annotated[Path, typer.Option("--repo", help="Repository root (default: current directory).")]


def _open(repo: Path, refresh: bool = False) -> CodeIndex:
    """The index of ``repo``, brought up to date first with ``refresh``."""
    from codeloop.index import CodeIndex

    if not repo.is_dir():
        raise fail(f"--repo {repo} is not a directory; pass the repository root")
    index = CodeIndex(repo)
    if refresh:
        report, _ = index.ensure_fresh()
        if report is not None and report.added + report.updated + report.removed:
            typer.echo(f"index refreshed: {report.added} added, {report.updated} updated, "
                       f"{report.removed} removed ({report.elapsed_ms} ms)", err=True)
    return index


def _run(action: Callable[[], T]) -> T:
    from codeloop.environments.errors import WorkspaceError
    from codeloop.index import CodeIndexError

    try:
        return action()
    except (CodeIndexError, WorkspaceError, ValueError, OSError) as exc:
        raise fail(str(exc)) from None
    except sqlite3.Error as exc:
        raise fail(f"index database error: {exc}; retry, or delete the index file shown by "
                    "'codeloop index status' and rebuild") from None


def _emit(value: Any, as_json_flag: bool, text: Callable[[], str]) -> None:
    from codeloop.index import as_json

    if as_json_flag:
        typer.echo(json.dumps(as_json(value), indent=2))
    else:
        typer.echo(text())


@index_app.command("build")
def build(repo: RepoOption = Path("."), json_out: JsonOption = False) -> None:
    """Create or incrementally refresh the index. Example: codeloop index build --repo ."""
    index = _open(repo)
    report = _run(index.build)
    _emit(report, json_out, lambda: (
        f"indexed {report.files_total} files ({report.added} added, {report.updated} updated, "
        f"{report.removed} removed, {report.unchanged} unchanged) in {report.elapsed_ms} ms"
        + (" [full rebuild]" if report.full_rebuild else "") + f"\nindex: {index.db_path}"))


@index_app.command("search")
def search(
    query: Annotated[str, typer.Argument(help="Words, or a substring with punctuation.")],
    repo: RepoOption = Path("."),
    limit: Annotated[int, typer.Option(min=1, max=1000, help="Most hits to show.")] = 10,
    mode: Annotated[str, typer.Option(help="auto, words (BM25) or substring (trigram).")] = "auto",
    path: Annotated[str, typer.Option("--path", help="Only search under this directory.")] = "",
    json_out: JsonOption = False,
) -> None:
    """Search code and documents. Example: codeloop index search "open session" --limit 5"""
    if mode not in {"auto", "words", "substring"}:
        raise fail(f"--mode {mode!r} is not one of auto, words, substring")
    hits = _run(lambda: _open(repo, True).search(query, limit, mode, path))  # type: ignore[arg-type]

    def text() -> str:
        if not hits:
            return f"no hits for {query!r}"
        blocks = []
        for h in hits:
            anchor = f"  [{h.heading}]" if h.heading else ""
            body = "\n".join("    " + line for line in h.snippet.split("\n"))
            blocks.append(f"{h.path}:{h.line}{anchor}\n{body}")
        return "\n".join(blocks)

    _emit(hits, json_out, text)


@index_app.command("symbols")
def symbols(
    path: Annotated[str | None, typer.Argument(help="Only this file.")] = None,
    repo: RepoOption = Path("."),
    name: Annotated[str | None, typer.Option(help="Name or qualified name (Class.method).")] = None,
    kind: Annotated[str | None, typer.Option(help="class, function, method, struct, ...")] = None,
    limit: Annotated[int, typer.Option(min=1, max=1_000_000)] = 500,
    json_out: JsonOption = False,
) -> None:
    """List definitions. Example: codeloop index symbols src/app.py  (or --name Session)"""
    found = _run(lambda: _open(repo, True).symbols(path, name, kind, limit))
    _emit(found, json_out, lambda: "\n".join(
        f"{s.path}:{s.start_line}:{s.start_column + 1}  {s.kind:<9} {s.qualified_name}" for s in found)
        or "no symbols")


@index_app.command("ast")
def ast(
    path: Annotated[str, typer.Argument(help="File to parse.")],
    repo: RepoOption = Path("."),
    depth: Annotated[int, typer.Option(min=1, max=64, help="Levels of nodes to show.")] = 6,
    max_nodes: Annotated[int, typer.Option(min=1, max=10_000_000, help="Most nodes to show.")] = 2000,
    json_out: JsonOption = False,
) -> None:
    """Show a file's syntax tree. Example: codeloop index ast src/app.py --depth 3"""
    tree = _run(lambda: _open(repo).ast(path, depth, max_nodes))

    def text() -> str:
        lines: list[str] = []

        def walk(node: dict[str, Any], level: int) -> None:
            extra = f" {node['text']!r}" if "text" in node else ""
            omitted = f" (+{node['children_omitted']} children)" if "children_omitted" in node else ""
            lines.append(f"{'  ' * level}{node['type']} {node['start'][0]}:{node['start'][1]}-"
                         f"{node['end'][0]}:{node['end'][1]}{extra}{omitted}")
            for child in node.get("children", []):
                walk(child, level + 1)

        walk(tree["root"], 0)
        return "\n".join(lines)

    _emit(tree, json_out, text)


@index_app.command("impact")
def impact(
    path: Annotated[str, typer.Argument(help="File whose import edges to show.")],
    repo: RepoOption = Path("."),
    json_out: JsonOption = False,
) -> None:
    """Files importing PATH and files it imports. Example: codeloop index impact src/auth/login.ts"""
    report = _run(lambda: _open(repo, True).impact(path))

    def text() -> str:
        out = [f"{report.file}", "inbound (imported by):"]
        out += [f"  {p}" for p in report.inbound] or ["  (none)"]
        out.append("outbound (imports):")
        out += [f"  {p}" for p in report.outbound] or ["  (none)"]
        if report.diagnostics:
            out.append("not resolved to repository files:")
            out += [f"  line {d.line}: {d.specifier or '<computed>'} ({d.status})" for d in report.diagnostics]
        return "\n".join(out)

    _emit(report, json_out, text)


@index_app.command("tree")
def tree(
    repo: RepoOption = Path("."),
    depth: Annotated[int, typer.Option("--max-depth", "--depth", min=1, max=1000, help="Levels to show.")] = 3,
    json_out: JsonOption = False,
) -> None:
    """Show the indexed files as a tree. Example: codeloop index tree --max-depth 2"""
    listing = _run(lambda: _open(repo, True).tree(depth))
    _emit({"tree": listing}, json_out, lambda: listing)


@index_app.command("status")
def status(repo: RepoOption = Path("."), json_out: JsonOption = False) -> None:
    """Say whether the index exists and is current. Example: codeloop index status --json"""
    state = _run(_open(repo).status)
    _emit(state, json_out, lambda: (
        f"repo: {state.repo_root}\nindex: {state.db_path}\n"
        f"state: {'stale (' + ', '.join(state.stale_reasons) + ')' if state.stale else 'fresh'}\n"
        f"files: {state.files}  symbols: {state.symbols}  size: {state.size_bytes} bytes"))


@index_app.command("watch")
def watch(repo: RepoOption = Path("."), json_out: JsonOption = False) -> None:
    """Keep the index fresh while files change (Ctrl-C stops). Example: codeloop index watch --repo ."""
    from codeloop.index import as_json
    from codeloop.index.watch import watch_index

    index = _open(repo)

    def report(r: Any) -> None:
        if json_out:
            typer.echo(json.dumps(as_json(r)))
        else:
            typer.echo(f"{r.files_total} files: {r.added} added, {r.updated} updated, {r.removed} removed "
                       f"({r.elapsed_ms} ms)")

    _run(lambda: watch_index(index, report))


def register(app: typer.Typer) -> None:
    """Add ``codeloop index ...`` to the main app."""
    app.add_typer(index_app, name="index")
