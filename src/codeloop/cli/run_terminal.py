"""The terminal side of ``codeloop run``: the one reader of stdin (:class:`Terminal`:
approval questions, steering, chat input) and the :class:`Renderer` of session events
(rich text with a live status line, JSON lines, or quiet).

rich and the agent are imported on first use so ``codeloop --help`` stays fast.
"""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

    from codeloop.agent import events as ev


def escape(text: str) -> str:
    """``rich.markup.escape``, imported on first use (cold start of ``codeloop --help``)."""
    from rich.markup import escape as rich_escape

    return rich_escape(text)


class NoTerminalError(Exception):
    """Approval is needed but nobody can answer (``--json`` or no terminal)."""


NO_TERMINAL = ("no terminal to ask for approval: pass --approval never-ask to allow such calls, "
               "or run codeloop in a terminal and answer the prompt, or pass --approval-from store and "
               "answer with codeloop approvals approve|deny ID")
TERMINAL = "terminal"
"""Who an answer typed at the prompt was given by, in the store and the session log."""


def take_lines(buffer: bytes) -> tuple[list[str], bytes]:
    """The complete lines of ``buffer`` (decoded, invalid UTF-8 replaced, a trailing CR
    dropped) and the unfinished rest. Splitting on ``\\n`` never cuts a UTF-8 character."""
    *complete, rest = buffer.split(b"\n")
    return [raw.removesuffix(b"\r").decode("utf-8", "replace") for raw in complete], rest


class Terminal:
    """The one reader of stdin (a tty): routes each typed line to a pending approval
    question, else to ``on_line`` (steering in a chat). Lines are read with the event
    loop's reader so nothing blocks and no thread is left behind."""

    def __init__(self, err: Console) -> None:
        import asyncio

        self.err = err
        self.lines: asyncio.Queue[str | None] = asyncio.Queue()
        self._buffer = b""
        self._question: asyncio.Future[str] | None = None
        self.on_line: Any = None
        """Called with a typed line when no question waits (else the line is queued)."""
        self.before_output: Any = None
        """Called before this class prints (hides the live status line)."""
        self.interactive = False
        """True when stdin is a terminal being read (approval questions can be asked)."""
        self.reading = False
        self.unanswered = 0
        """Calls that needed approval and were denied because no terminal could answer."""

    def start(self, *, pipes: bool = False) -> bool:
        """Start reading stdin; False when it is not a terminal (nor a pipe, with ``pipes``).
        Approval questions are only asked on a terminal."""
        import asyncio

        tty = sys.stdin.isatty()
        if not (tty or pipes):
            return False
        try:
            asyncio.get_running_loop().add_reader(sys.stdin.fileno(), self._readable)
        except (NotImplementedError, OSError, ValueError, PermissionError):
            return False
        self.reading, self.interactive = True, tty
        return True

    def stop(self) -> None:
        import asyncio

        if self.reading:
            asyncio.get_running_loop().remove_reader(sys.stdin.fileno())
            self.reading = self.interactive = False

    def _readable(self) -> None:
        chunk = os.read(sys.stdin.fileno(), 65536)
        if not chunk:
            self.stop()
            self._deliver(None)
            return
        lines, self._buffer = take_lines(self._buffer + chunk)
        for line in lines:
            self._deliver(line)

    def _deliver(self, line: str | None) -> None:
        if self._question is not None and not self._question.done():
            self._question.set_result(line or "")
        elif self.on_line is not None and line is not None:
            if self.before_output is not None:
                self.before_output()
            self.on_line(line)
        else:
            self.lines.put_nowait(line)

    async def ask(self, entry: Any) -> str:
        """Ask about a pending call (``codeloop.policy.pending.PendingCall``): ``y``, ``n`` or
        ``always``. NoTerminalError when nobody can answer here."""
        import asyncio

        if self.before_output is not None:
            self.before_output()
        if not self.interactive:
            self.unanswered += 1
            self.err.print(f"[yellow]not run:[/] {escape(entry.summary(200))} ({escape(entry.reason)}); "
                           f"{escape(NO_TERMINAL)}")
            raise NoTerminalError(NO_TERMINAL)
        always = (f"  [a] always ({escape(', '.join(entry.remember_as))})" if "always" in entry.grants else "")
        self.err.print(f"\n[bold yellow]Approve?[/] {escape(entry.summary(500))}\n  [dim]{escape(entry.reason)}"
                       f" (or from another shell: codeloop approvals approve|deny {entry.id})[/]\n"
                       f"  [y] yes  [n] no{always} > ", end="")
        self._question = asyncio.get_running_loop().create_future()
        try:
            answer = (await self._question).strip().lower()
        finally:
            self._question = None
        return {"y": "y", "yes": "y", "a": "always", "always": "always"}.get(answer, "n")

    def client(self) -> Any:
        """This terminal as a client of the pending store (``tools/pipeline.py`` ``AskClient``):
        asks about each new pending call and answers it through the store, as ``terminal``;
        an answer given elsewhere first wins (the question is then withdrawn). With no terminal
        to ask, the call is denied, by ``codeloop``, saying so."""
        from codeloop.policy.pending import AlreadyDecided

        async def ask(entry: Any, store: Any) -> None:
            try:
                answer = await self.ask(entry)
            except NoTerminalError:
                store.decide(entry.id, "deny", "codeloop", NO_TERMINAL)
                return
            scope = "always" if answer == "always" and "always" in entry.grants else "once"
            verdict = "deny" if answer == "n" else "approve"
            decided = store.decide(entry.id, verdict, TERMINAL, "" if verdict == "approve" else "the user declined", scope)
            if isinstance(decided, AlreadyDecided):
                self.err.print(f"[yellow]{escape(decided.describe(entry.id))}[/]")

        return ask


class Renderer:
    """Turns events into terminal output: rich (default), JSON lines or quiet. In rich mode
    on a terminal, a live status line (``cli/status.py``) shows progress while a turn runs."""

    def __init__(self, mode: str, out: Console, err: Console, *, live_status: bool | None = None) -> None:
        from codeloop.cli.status import StatusLine, Usage

        self.mode, self.out, self.err = mode, out, err
        self.final_text = ""
        self._reply = ""
        self.paused: Any = None
        """The ``budget`` event that stopped the last input (issue 36), else None."""
        """The model's last text (every mode), to tell a replaced answer at SESSION_END."""
        self.last_message = ""
        """The last non-empty assistant text, in every mode (``--output-last-message``, ``/go``)."""
        self._streamed = False
        self.usage = Usage()
        """Since the last input: model calls, tokens, start time."""
        self._busy = False
        """Between a user input and the end of its turn."""
        self.model = ""
        """The model of the session (from SESSION_START), for prices."""
        if live_status is None:
            live_status = mode == "rich" and err.is_terminal and not err.is_dumb_terminal
        self.status = StatusLine(err, lambda: self.usage, lambda: self.model) if live_status else None
        self.pending_lines = True
        """Print a line for each call that starts waiting in the pending store (off when the
        terminal's own question shows it)."""
        self.hints: dict[str, str] = {}
        """Fix for an error type (``AuthenticationError``: which variable to set ...)."""

    def summary(self) -> str:
        """One line for the end of an input: calls, tokens, elapsed time, cost when the
        catalog knows the model's prices."""
        calls = self.usage.calls
        return f"{calls} model call{'s' if calls != 1 else ''} · tokens {self.usage.describe(self.model)}"

    def _report(self, event: ev.SessionEvent) -> str:
        """The answer an input ended with when it is not the model's last text (a small
        model's empty or echoed reply replaced by what its calls did); "" otherwise."""
        from codeloop.agent import events as ev

        if isinstance(event, ev.AssistantTextEnd):
            self._reply = event.text
        elif isinstance(event, ev.SessionEnd) and event.final_text.strip() and event.final_text != self._reply:
            self._reply = self.last_message = event.final_text
            return event.final_text
        return ""

    def pause(self) -> None:
        """Hide the status line before something else is printed (e.g. a question)."""
        if self.status is not None:
            self.status.hide()

    def __call__(self, event: ev.SessionEvent) -> None:
        from codeloop.agent import events as ev

        if isinstance(event, ev.AssistantTextEnd) and event.text.strip():
            self.last_message = event.text
        report = self._report(event)
        if isinstance(event, ev.BudgetEvent) and event.limit is not None:
            self.paused = event
        if self.mode == "json":
            sys.stdout.write(json.dumps(ev.event_to_json(event), default=str) + "\n")
            sys.stdout.flush()
            if isinstance(event, ev.ErrorEvent):
                self._print_error(event)
            return
        if isinstance(event, ev.AssistantTextEnd):
            self.final_text = event.text
        if report:
            self.final_text = report
        if self.mode == "quiet":
            return
        self.pause()
        if report:
            self.out.print(escape(report), highlight=False)
        self._rich(event)
        if self.status is not None and self._busy and not self._streamed:
            self.status.show()

    def _rich(self, event: ev.SessionEvent) -> None:
        from codeloop.agent import events as ev
        from codeloop.cli.status import WAITING, Usage, edit_preview

        if isinstance(event, ev.SessionStart):
            self.model = event.model
        elif isinstance(event, ev.UserInput):
            self.usage, self._busy = Usage(), True
            self._activity(WAITING)
        elif isinstance(event, ev.SessionEnd):
            self._busy = False
            if self.usage.calls:
                self.err.print(f"[dim]{escape(self.summary())}[/]", highlight=False)
                self.usage = Usage()
        elif isinstance(event, ev.AssistantTextDelta):
            self.out.print(escape(event.delta), end="", highlight=False)
            self._streamed = True
        elif isinstance(event, ev.AssistantTextEnd):
            self.usage.add(event.input_tokens, event.cache_read_tokens, event.output_tokens)
            self._activity(WAITING)
            if self._streamed:
                self.out.print()
            self._streamed = False
        elif isinstance(event, ev.ToolCallStart):
            args = ", ".join(f"{k}={json.dumps(v)[:80]}" for k, v in event.arguments.items())
            self.out.print(f"[bold cyan]⏺ {escape(event.tool_name)}[/]({escape(args)})", highlight=False)
            for style, line in edit_preview(event.arguments):
                self.out.print(f"  [{style}]{escape(line)}[/]", highlight=False)
            self._activity(f"running {event.tool_name}")
        elif isinstance(event, ev.ToolCallEnd):
            text = event.error if event.is_error else event.output
            lines = (text or "").rstrip().splitlines()
            tail = "\n".join(lines[-6:])
            more = f"  … {len(lines) - 6} more lines above\n" if len(lines) > 6 else ""
            style = "red" if event.is_error else "dim"
            self.out.print(f"[{style}]{more}{escape(tail)}[/]", highlight=False)
            self._activity(WAITING)
        elif isinstance(event, ev.ApprovalPending) and self.pending_lines:
            self.err.print(f"[yellow]waiting for approval:[/] {escape(event.summary[:200])} ({escape(event.reason)}); "
                           f"answer with codeloop approvals approve|deny {event.pending_id}", highlight=False)
        elif isinstance(event, ev.ApprovalDecided):
            why = f": {event.reason}" if event.reason else ""
            scope = " (always)" if event.scope == "always" else ""
            self.err.print(f"[dim]{escape(event.status)}{scope} by {escape(event.decided_by)}{escape(why)}[/]",
                           highlight=False)
        elif isinstance(event, ev.WarningEvent) and event.code == "small_model_progress":
            self._activity(event.message)  # a draft's progress: the status line only
        elif isinstance(event, ev.WarningEvent) and event.code == "small_model":
            self.err.print(f"[dim]{escape(event.message)}[/]", highlight=False)  # progress, not a warning
            self._activity(event.message)
        elif isinstance(event, ev.WarningEvent | ev.LoopDetection | ev.TurnLimit | ev.SteeringInjected):
            self.err.print(f"[yellow]{escape(_describe(event))}[/]")
        elif isinstance(event, ev.ErrorEvent):
            self._print_error(event)
        elif isinstance(event, ev.ContextCompacted):
            self.err.print(f"[dim]context compacted: {len(event.dropped)} earlier tool outputs removed "
                           f"(~{event.tokens_before:,} -> ~{event.tokens_after:,} tokens); the agent can "
                           "read them back with recall_output[/]", highlight=False)
        elif isinstance(event, ev.Retry):
            if self._streamed:  # the partial reply stays on screen; say it is dropped
                self.out.print()
                self._streamed = False
            self.err.print(f"[yellow]{escape(describe_retry(event))}[/]")
            self._activity(WAITING)

    def _print_error(self, event: ev.ErrorEvent) -> None:
        self.err.print(f"[red]error:[/] {escape(event.message)}")
        hint = self.hints.get(event.error_type)
        if hint:
            self.err.print(f"  [yellow]fix:[/] {escape(hint)}")

    def _activity(self, text: str) -> None:
        if self.status is not None:
            self.status.activity = text


BUDGET_FLAGS = {"cost": ("cost_usd", "--max-cost"), "tokens": ("tokens", "--max-tokens"),
                "time": ("seconds", "--max-time"), "turns": ("turns", "--max-turns")}
"""Limit name -> (key in the event's figures, the flag that raises it)."""


def describe_budget_stop(event: ev.BudgetEvent) -> str:
    """``paused: the cost limit ($0.05) is reached ($0.0493 used) ...``."""
    key, flag = BUDGET_FLAGS.get(event.limit or "", ("", "a higher limit"))
    used, limit = event.used.get(key), event.limits.get(key)

    def show(value: Any) -> str:
        if value is None:
            return "?"
        return f"${value:.4f}" if key == "cost_usd" else f"{value:g} s" if key == "seconds" else f"{value:,}"

    return (f"paused: the {event.limit} limit ({show(limit)}) leaves no room for the next model call "
            f"({show(used)} used, subagents included); go on with --resume ID and a higher {flag}")


def describe_retry(event: ev.Retry) -> str:
    """``rate limited, retrying in 2 s (2/6)``, plus a note when streamed text is dropped."""
    dropped = "; the partial reply above is discarded" if event.discard_deltas else ""
    return f"{event.cause}, retrying in {event.wait:.2g} s ({event.attempt}/{event.max_retries}){dropped}"


def _describe(event: ev.SessionEvent) -> str:
    from codeloop.agent import events as ev

    if isinstance(event, ev.TurnLimit):
        return f"stopped: limit reached (round {event.round}, turns {event.total_turns})"
    if isinstance(event, ev.SteeringInjected):
        return f"steering: {event.content}"
    return getattr(event, "message", event.kind.value)


def route_typed_line(session: Any, line: str, err: Console) -> None:
    """A line typed while the agent works: ``>> text`` queues a follow-up, else it steers."""
    text = line.strip()
    if not text:
        return
    if text.startswith(">>"):
        session.follow_up(text[2:].strip())
        err.print(f"[dim]queued follow-up: {escape(text[2:].strip())}[/]")
    else:
        session.steer(text)
        err.print(f"[dim]steering: {escape(text)}[/]")
