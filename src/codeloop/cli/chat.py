"""The chat of ``codeloop run`` without a TASK: read a message, run it, repeat (keys in
docs/agent.md). Ctrl-C aborts the turn, twice quits; ``/plan`` and ``/go`` switch plan mode
(:mod:`codeloop.cli.plan`). The :class:`~codeloop.cli.run.Runner` holds the Session.
"""

from __future__ import annotations

import asyncio
import signal
import time
from typing import TYPE_CHECKING

from codeloop.cli.commands import CommandError, Prompt, help_text, load_commands, prepare
from codeloop.cli.images import ImageError
from codeloop.cli.model_choice import UsageError
from codeloop.cli.plan import GO_HINT, chat_command, go_message
from codeloop.cli.run_terminal import escape, route_typed_line

if TYPE_CHECKING:
    from rich.console import Console

    from codeloop.cli.run import Runner
    from codeloop.cli.run_terminal import Terminal


CHAT_HELP = ("Chat with the agent. Enter sends the message; end a line with \\ to continue it on the next "
             "line. While the agent works, Enter sends the line as steering and '>> text' queues a "
             "follow-up. /plan: plan mode (the agent only reads and answers with a plan); /go runs the plan "
             "(/go TEXT: your edited plan). /undo takes back the last turn that changed files (shell commands too), "
             "/redo the last /undo. /context shows the context window's use by part. /help lists the commands, your own /NAME commands too; @shot.png "
             "attaches an image. Ctrl-C aborts the current turn; Ctrl-C twice (or Ctrl-D, or "
             "/exit) quits.")


async def read_message(terminal: Terminal, out: Console) -> str | None:
    """One message from the terminal: lines ending in ``\\`` continue; None at end of input."""
    parts: list[str] = []
    out.print("[bold green]›[/] ", end="")
    while True:
        line = await terminal.lines.get()
        if line is None:
            return None
        if line.endswith("\\"):
            parts.append(line[:-1])
            out.print("[dim]…[/] ", end="")
            continue
        parts.append(line)
        return "\n".join(parts)


async def run_chat(runner: Runner, resume: str | None) -> tuple[str, str | None, int]:
    """The interactive chat of ``codeloop run`` without a TASK (see CHAT_HELP); returns what
    :func:`codeloop.cli.run.run_task` does."""
    renderer, err, terminal = runner.renderer, runner.err, runner.terminal
    loop = asyncio.get_running_loop()
    turn: asyncio.Task[str] | None = None
    last_press = [0.0]
    quitting = [False]
    aborts: list[asyncio.Task[None]] = []

    def on_sigint() -> None:
        renderer.pause()
        now = time.monotonic()
        again = now - last_press[0] < 2.0
        last_press[0] = now
        if again:
            quitting[0] = True
            if turn is not None and not turn.done():
                turn.cancel()
            terminal.lines.put_nowait(None)
        elif turn is not None and not turn.done():
            err.print("\n[yellow]aborting the turn (Ctrl-C again to quit)[/]")
            aborts.append(loop.create_task(runner.session.abort()))
        else:
            err.print("\n[dim](Ctrl-C again to quit)[/]")

    reason = "closed"
    try:
        if not terminal.start(pipes=True):
            raise UsageError("no input: run codeloop run without a TASK in a terminal, or pass a TASK")
        await runner.start(resume)
        loop.add_signal_handler(signal.SIGINT, on_sigint)
        err.print(f"[dim]{escape(CHAT_HELP)}[/]")
        while not quitting[0]:
            text = await read_message(terminal, renderer.out)
            if text is None or text.strip() in ("/exit", "/quit"):
                break
            if not text.strip():
                continue
            if text.strip() in ("/undo", "/redo"):
                await chat_take_back(runner, text.strip() == "/redo", err)
                continue
            command = chat_command(text)
            if command is not None:
                text = await plan_switch(runner, command)
                if not text:
                    continue
            prompt = chat_prompt(text, runner, err)
            if prompt is None:
                continue
            last_press[0] = 0.0  # a Ctrl-C before this message does not make the next one a "twice"
            if terminal.interactive:
                terminal.on_line = lambda line: route_typed_line(runner.session, line, err)
            turn = loop.create_task(runner.submit(prompt))
            try:
                reason = await turn
            except asyncio.CancelledError:
                reason = "aborted"
            except CommandError as exc:
                err.print(f"[red]error:[/] {escape(str(exc))}")
                continue
            finally:
                terminal.on_line = None
            renderer.out.print()
            if runner.plan and reason == "completed":
                err.print(f"[bold]{escape(GO_HINT)}[/]")
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        terminal.stop()
        await runner.close()
    return ("closed" if reason in ("completed", "aborted") else reason), runner.log_id, terminal.unanswered


async def chat_take_back(runner: Runner, redo: bool, err: Console) -> None:
    """``/undo`` or ``/redo``: say what changed, or why nothing did."""
    from codeloop.sessions import RewindRefusedError

    try:
        result = await runner.take_back(redo)
    except (RewindRefusedError, OSError, ValueError) as exc:
        err.print(f"[red]error:[/] {escape(str(exc))}")
        return
    verb = "redone" if redo else "undone"
    err.print(f"{verb}: the conversation now ends with turn {result.turn}; "
              f"{len(result.restored)} file(s) restored, {len(result.deleted)} deleted", highlight=False)
    for change in result.changes:
        err.print(f"  {escape(change.describe())}", highlight=False)


def chat_prompt(text: str, runner: Runner, err: Console) -> Prompt | None:
    """A typed message as the prompt to send; None when it is ``/help`` or cannot be sent
    (the reason is shown)."""
    settings = runner.settings
    try:
        if text.strip() == "/help":
            err.print(escape(help_text(load_commands(settings.root))), highlight=False)
            return None
        if text.strip() == "/context":
            err.print(escape(describe_context(runner.session.context_use())), highlight=False)
            return None
        prompt = prepare(text, settings.root, settings.choice)
    except (CommandError, ImageError) as exc:
        err.print(f"[red]error:[/] {escape(str(exc))}")
        return None
    if prompt.command is not None and prompt.command.model:
        err.print(f"[yellow]note: /{escape(prompt.command.name)} asks for the model {escape(prompt.command.model)}; "
                  "a chat keeps its model (codeloop run /NAME uses it)[/]")
    return prompt


def describe_context(use: dict[str, int]) -> str:
    """``/context``: each part's estimated tokens and share of the window, one line each."""
    window = max(use.get("window", 0), 1)
    parts = {k: v for k, v in use.items() if k != "window"}
    total = sum(parts.values())
    lines = [f"context: ~{total:,} of {window:,} tokens ({total * 100 // window}%)"]
    lines += [f"  {name:<18} ~{tokens:>8,}  {tokens * 100 / window:5.1f}%" for name, tokens in parts.items()]
    return "\n".join(lines)


async def plan_switch(runner: Runner, command: tuple[str, str]) -> str:
    """Apply ``/plan`` or ``/go [TEXT]`` in a chat; the input to send next ("" for none)."""
    err = runner.err
    name, edited = command
    if name == "plan":
        await runner.set_plan(True)
        shell = "in a read-only sandbox" if await runner.check_plan_shell() else "refused (no bubblewrap)"
        err.print(f"[bold]plan mode on[/]: the agent may only read (shell {shell}); /go runs its plan")
        return edited
    plan = edited or (runner.renderer.last_message if runner.plan else "")
    if not plan:
        err.print("[yellow]/go runs a plan: make one in plan mode first (/plan), or pass it: /go TEXT[/]")
        return ""
    await runner.set_plan(False)
    err.print("[bold]plan mode off[/]: running the plan with the normal tools")
    return go_message(plan)
