"""The agent's Session runs the diagnostics after edits (``SessionConfig.diagnostics``, issue 21):
the model reads where its edit broke the file; off, nothing is added; a diagnostics command that
hangs is a warning event and the session goes on."""

from __future__ import annotations

from codeloop.agent import events as ev
from codeloop.agent.config import SessionConfig
from codeloop.llm.adapters.scripted import text_response
from codeloop.tools.diagnostics import DiagnosticCommand

from .agent_harness import PROFILES, calls

BROKEN = "def main():\nprint('hi')\n"


async def test_the_model_reads_the_syntax_error_its_edit_introduced_in_every_profile(harness) -> None:
    for profile in PROFILES:
        h = harness(profile, [calls(profile, ("write_file", {"file_path": f"{profile}.py", "content": BROKEN})),
                              text_response("done")])
        await h.session.submit("write it")
        result = h.sent_texts(1)[-1]
        assert f"[diagnostics] {profile}.py does not parse after this edit:" in result, (profile, result)
        assert "line 2, column 1: expected an indented block" in result
        end = h.of(ev.ToolCallEnd)[0]
        assert "[diagnostics]" in str(end.output)


async def test_switched_off_the_result_is_the_plain_one(harness) -> None:
    h = harness("anthropic", [calls("anthropic", ("write_file", {"file_path": "a.py", "content": BROKEN})),
                              text_response("done")], SessionConfig(diagnostics=False,
                                                                     diagnostic_commands=(DiagnosticCommand("false"),)))
    await h.session.submit("write it")
    assert h.sent_texts(1)[-1] == "Wrote 24 bytes to a.py"


async def test_a_hanging_command_is_a_warning_and_the_session_goes_on(harness) -> None:
    hang = DiagnosticCommand("sleep 300", timeout=0.5)
    h = harness("anthropic", [calls("anthropic", ("write_file", {"file_path": "a.py", "content": "x = 1\n"})),
                              text_response("done")], SessionConfig(diagnostic_commands=(hang,)))
    assert await h.session.submit("write it") == "done"
    assert h.sent_texts(1)[-1] == "Wrote 6 bytes to a.py"
    warnings = [w for w in h.of(ev.WarningEvent) if w.code == "diagnostics"]
    assert len(warnings) == 1 and "`sleep 300` ran past its timeout of 0.5 s" in warnings[0].message
