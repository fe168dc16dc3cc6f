"""The live status line of ``codeloop run`` and the compact previews of edits.

While a turn runs on a terminal, the bottom line shows what the agent is doing and what it
has cost so far: ``⠋ qwen2.5-coder · turn 3 · running shell · in 4,210 (cached 1,024) / out
312 · 12.4s · ≤ $0.0021``. It is a transient ``rich.live.Live`` on stderr: it disappears
before anything else is printed (streamed text, tool calls, questions) and comes back once
the agent is waiting again, so it never mixes with the transcript above it.
"""

from __future__ import annotations

import difflib
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console
    from rich.live import Live
    from rich.spinner import Spinner


WAITING = "waiting for the model"
"""The activity shown while a model call is in flight."""


class Usage:
    """Model calls and tokens since the last user input, with its start time."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.calls = self.tokens_in = self.cached = self.tokens_out = 0
        self.started = clock()

    def add(self, tokens_in: int, cached: int, tokens_out: int) -> None:
        self.calls += 1
        self.tokens_in += tokens_in
        self.cached += cached
        self.tokens_out += tokens_out

    def cost(self, model: str) -> float | None:
        """Upper bound of the price in dollars, when the catalog knows the model's prices
        (cached input is billed at the full input price here)."""
        from codeloop.llm.catalog import get_model_info

        info = get_model_info(model) if model else None
        if info is None or info.input_cost_per_million is None or info.output_cost_per_million is None:
            return None
        return (self.tokens_in * info.input_cost_per_million + self.tokens_out * info.output_cost_per_million) / 1e6

    def describe(self, model: str) -> str:
        """``in 1,200 (cached 0) / out 80 · 3.2s`` and ``· ≤ $0.0012`` when priced."""
        line = (f"in {self.tokens_in:,} (cached {self.cached:,}) / out {self.tokens_out:,} · "
                f"{self.clock() - self.started:.1f}s")
        cost = self.cost(model)
        return line + (f" · ≤ ${cost:.4f}" if cost is not None else "")


class StatusLine:
    """The transient bottom line; ``show`` and ``hide`` are cheap and idempotent."""

    def __init__(self, console: Console, usage: Callable[[], Usage], model: Callable[[], str]) -> None:
        self.console = console
        self._usage, self._model = usage, model
        self.activity = WAITING
        self._live: Live | None = None
        self._spinner: Spinner | None = None

    def text(self) -> str:
        """The line as it reads now (the spinner aside)."""
        usage = self._usage()
        # While the model is asked, its call is not counted yet; while tools run, it is.
        turn = usage.calls + (1 if self.activity == WAITING else 0)
        parts = [self._model() or "model", f"turn {max(turn, 1)}", self.activity, usage.describe(self._model())]
        return " · ".join(parts)

    def __rich__(self) -> Any:
        from rich.spinner import Spinner
        from rich.text import Text

        if self._spinner is None:
            self._spinner = Spinner("dots", style="cyan")
        self._spinner.text = Text(self.text(), style="dim")
        return self._spinner

    @property
    def visible(self) -> bool:
        return self._live is not None

    def show(self) -> None:
        if self._live is None:
            from rich.live import Live

            # Four refreshes a second keep the clock moving without stealing the CPU a local
            # model needs; transient: stopping it erases the line.
            self._live = Live(self, console=self.console, transient=True, refresh_per_second=4,
                              redirect_stdout=False, redirect_stderr=False)
            self._live.start()

    def hide(self) -> None:
        if self._live is not None:
            live, self._live = self._live, None
            live.stop()


def edit_preview(arguments: dict[str, Any], max_lines: int = 12) -> list[tuple[str, str]]:
    """Diff lines to show under an edit call, as ``(style, text)``: the change of an
    ``old_string``/``new_string`` edit, or the ``+``/``-`` lines of a v4a patch. Empty for
    other calls. At most ``max_lines``, then a count of the rest."""
    old, new = arguments.get("old_string"), arguments.get("new_string")
    lines: list[tuple[str, str]] = []
    if isinstance(old, str) and isinstance(new, str):
        diff = difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=1)
        for line in diff:
            if line.startswith(("---", "+++", "@@")):
                continue
            lines.append(_styled(line))
    else:
        patch = next((v for v in arguments.values() if isinstance(v, str) and "*** Begin Patch" in v), None)
        if patch is None:
            return []
        for line in patch.splitlines():
            if line.startswith("*** ") and not line.startswith(("*** Begin", "*** End")):
                lines.append(("bold", line))
            elif line.startswith(("+", "-")):
                lines.append(_styled(line))
    if len(lines) > max_lines:
        rest = len(lines) - max_lines
        lines = [*lines[:max_lines], ("dim", f"… {rest} more diff line{'s' if rest != 1 else ''}")]
    return lines


def _styled(line: str) -> tuple[str, str]:
    return {"+": "green", "-": "red"}.get(line[:1], "dim"), line
