"""Session configuration (loop spec §2.2), with codeloop's additions marked as such."""

from __future__ import annotations

from dataclasses import dataclass, field

from codeloop.tools.diagnostics import DiagnosticCommand

REASONING_EFFORTS = ("low", "medium", "high", "xhigh", "minimal", "none")
"""Values accepted for ``reasoning_effort`` besides ``None`` (§2.7: some providers add more)."""


@dataclass(frozen=True)
class SessionConfig:
    """Limits and settings of one session. Immutable: change it with
    :meth:`codeloop.agent.Session.set_reasoning_effort` or ``dataclasses.replace``."""

    max_turns: int = 0
    """Turns across the whole session before TURN_LIMIT; 0 = unlimited (§2.2)."""
    max_tool_rounds_per_input: int = 200
    """Tool rounds per user input before TURN_LIMIT (§2.2)."""
    max_model_calls_per_input: int = 0
    """codeloop: model calls per user input (nudges included) before TURN_LIMIT; 0 = unlimited."""
    default_command_timeout_ms: int = 10_000
    """Shell timeout when the call gives none; the profile may set its own default (§5.4)."""
    max_command_timeout_ms: int = 600_000
    """Upper bound for any ``timeout_ms`` a call asks for."""
    reasoning_effort: str | None = None
    """``low``/``medium``/``high`` (or a provider extra such as ``xhigh``); None = provider default."""
    tool_output_limits: dict[str, int] = field(default_factory=dict)
    """Per-tool character limits overriding §5.2 defaults."""
    tool_line_limits: dict[str, int] = field(default_factory=dict)
    """Per-tool line limits overriding §5.2 defaults."""
    enable_loop_detection: bool = True
    """Warn the model when its last calls repeat a pattern (§2.10)."""
    loop_detection_window: int = 10
    """How many recent calls the loop detector looks at."""
    max_subagent_depth: int = 1
    """How deep subagents may nest; 1 = children cannot spawn (§7.3)."""
    subagent_max_turns: int = 50
    """codeloop: default turn limit of a child session (§7.2 ``max_turns`` default)."""
    user_instructions: str = ""
    """codeloop: layer 5 of the system prompt (§6.1), appended last."""
    stream: bool = True
    """codeloop: stream replies (ASSISTANT_TEXT_DELTA) when the client supports it."""
    tool_call_recovery: bool | None = None
    """codeloop (issue 10): run tool calls written as text when a reply has no structured
    call; None = the profile decides (on for OpenAI-compatible servers and ``text``)."""
    check_claims: bool | None = None
    """No longer used: the claim checks that read the model's prose went with issue 33. Kept so
    that callers setting it (codali) still build a config."""
    small_model_rescues: bool | None = None
    """codeloop (issue 20): the rescues of small models (docs/local-models.md, "Rescues for
    small models"). Replies are read the way small local models write them: empty optional
    arguments count as absent, a tool named like a file or a wish is understood or answered
    with the exact call, a file name followed by a fenced block is an edit, an echo of the
    prompt, the tools or an error is sent back. Turns: the files a task names go in front of
    it, repeated reads and writes are answered "already done", a loop ignored twice ends the
    input, a named command is run before the final answer, a true report replaces an empty or
    echoed final text. None = on for small context windows (the compact prompt)."""
    small_model_strategy: bool = False
    """codeloop (issue 33): each input of a compact profile (a small context window) runs the
    small-model strategy (draft under the reply grammar, check in a scratch copy, choose;
    :mod:`codeloop.agent.small_model.strategy`) instead of the tool loop. ``codeloop run``
    turns it on for the local llama.cpp model (embedded or ``--model-file``); a profile that is
    not compact (every cloud profile) never reaches it, whatever this says."""
    small_model_samples: int = 2
    """codeloop (issue 33): candidates the strategy drafts, each with its own seed, after a
    greedy one that fails a check (0: none)."""
    track_reads: bool = True
    """codeloop (issue 19): a write over a file this session has not read, or that changed since
    it did, is refused; off where file contents reach the model another way (codali's responses)."""
    diagnostics: bool = True
    """codeloop (issue 21): after ``write_file``, ``edit_file`` and ``apply_patch``, append to the
    result the syntax errors the edit introduced and what ``diagnostic_commands`` print
    (:mod:`codeloop.tools.diagnostics`); a clean edit's result is unchanged."""
    diagnostic_commands: tuple[DiagnosticCommand, ...] = ()
    """codeloop (issue 21): commands run after each such edit (``diagnostics = [...]`` in the config
    files); nothing runs when ``diagnostics`` is off."""
    context_warning_ratio: float = 0.8
    """Fraction of the context window at which the §5.5 warning fires."""
    constrained_decoding: str = "off"
    """codeloop (issue 10): ``on`` = every reply is constrained to one JSON tool call or a
    final answer (server-side JSON Schema, :mod:`codeloop.llm.constrained`); ``auto`` =
    probe the server once and use it when honoured; ``off`` = native/recovered calls."""
    max_retries: int = 6
    """codeloop (issue 23): retries of one model call after a transient failure (429, 5xx,
    a dropped connection); 0 = none (:mod:`codeloop.agent.model_calls`)."""
    retry_base_delay: float = 1.0
    """Seconds before the first retry; doubled each time, with jitter (unified-llm §6.6)."""
    retry_max_delay: float = 60.0
    """Longest wait between retries; a provider asking for longer ends the call."""
    retry_max_total: float = 300.0
    """Seconds after a model call began past which no retry starts."""

    def __post_init__(self) -> None:
        if self.reasoning_effort is not None and self.reasoning_effort not in REASONING_EFFORTS:
            raise ValueError(
                f"reasoning_effort must be one of {', '.join(REASONING_EFFORTS)} or None, "
                f"not {self.reasoning_effort!r}"
            )
        if self.constrained_decoding not in ("auto", "on", "off"):
            raise ValueError(f"constrained_decoding must be auto, on or off, not {self.constrained_decoding!r}")
        for name in ("max_turns", "max_tool_rounds_per_input", "max_model_calls_per_input", "loop_detection_window",
                     "max_subagent_depth", "small_model_samples", "max_retries", "retry_base_delay", "retry_max_delay", "retry_max_total"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, not {getattr(self, name)}")
