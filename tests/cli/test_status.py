"""The live status line and the edit previews of ``codeloop run`` (cli/status.py), driven
by real agent events through the Renderer; the terminal behaviour itself is checked in
tmux (test_interactive_tmux.py)."""

from __future__ import annotations

import io

from rich.console import Console

from codeloop.agent import events as ev
from codeloop.cli.run_terminal import Renderer
from codeloop.cli.status import StatusLine, Usage, edit_preview


def console(terminal: bool) -> Console:
    return Console(file=io.StringIO(), force_terminal=terminal, width=160, color_system=None)


def test_usage_counts_calls_and_tokens_and_prices_known_models() -> None:
    now = [100.0]
    usage = Usage(clock=lambda: now[0])
    usage.add(1200, 200, 80)
    usage.add(300, 0, 20)
    now[0] = 103.25
    assert (usage.calls, usage.tokens_in, usage.cached, usage.tokens_out) == (2, 1500, 200, 100)
    assert usage.describe("no-such-model") == "in 1,500 (cached 200) / out 100 · 3.2s"
    priced = usage.describe("claude-sonnet-4-5")
    assert priced.startswith("in 1,500 (cached 200) / out 100 · 3.2s · ≤ $")
    assert float(priced.rsplit("$", 1)[1]) > 0


def test_status_text_names_model_turn_activity_and_tokens() -> None:
    usage = Usage()
    line = StatusLine(console(True), lambda: usage, lambda: "qwen-coder")
    assert line.text().startswith("qwen-coder · turn 1 · waiting for the model · in 0 (cached 0) / out 0 · ")
    usage.add(10, 0, 5)
    line.activity = "running shell"
    assert line.text().startswith("qwen-coder · turn 1 · running shell · in 10 (cached 0) / out 5 · ")
    line.activity = "waiting for the model"
    assert " · turn 2 · " in line.text()


def test_renderer_shows_the_line_only_while_waiting_and_never_while_text_streams() -> None:
    out, err = console(True), console(True)
    renderer = Renderer("rich", out, err, live_status=True)
    status = renderer.status
    assert status is not None
    seen: list[tuple[str, bool, str]] = []

    def feed(event: ev.SessionEvent) -> None:
        renderer(event)
        seen.append((event.kind.value, status.visible, status.activity))

    try:
        feed(ev.SessionStart(session_id="s", profile="text", model="m", working_directory="/w"))
        feed(ev.UserInput(session_id="s", content="go"))
        feed(ev.AssistantTextStart(session_id="s"))
        feed(ev.AssistantTextDelta(session_id="s", delta="Let me look"))
        feed(ev.AssistantTextEnd(session_id="s", text="Let me look", tool_call_count=1, input_tokens=10,
                                 output_tokens=3))
        feed(ev.ToolCallStart(session_id="s", tool_name="shell", call_id="c1", arguments={"command": "ls"}))
        feed(ev.ToolCallEnd(session_id="s", call_id="c1", tool_name="shell", output="a.txt"))
        feed(ev.SessionEnd(session_id="s", state="idle", reason="completed"))
    finally:
        status.hide()
    assert seen == [
        ("session_start", False, "waiting for the model"),
        ("user_input", True, "waiting for the model"),
        ("assistant_text_start", True, "waiting for the model"),
        ("assistant_text_delta", False, "waiting for the model"),
        ("assistant_text_end", True, "waiting for the model"),
        ("tool_call_start", True, "running shell"),
        ("tool_call_end", True, "waiting for the model"),
        ("session_end", False, "waiting for the model"),
    ]
    text = out.file.getvalue()  # type: ignore[attr-defined]
    assert "Let me look" in text and "shell" in text and "a.txt" in text
    assert "1 model call · tokens in 10 (cached 0) / out 3" in err.file.getvalue()  # type: ignore[attr-defined]


def test_no_status_line_off_a_terminal_or_in_json_and_quiet_modes() -> None:
    assert Renderer("rich", console(False), console(False)).status is None
    assert Renderer("json", console(True), console(True)).status is None
    assert Renderer("quiet", console(True), console(True)).status is None
    assert Renderer("rich", console(True), console(True)).status is not None


def test_edit_preview_shows_the_change_of_an_edit() -> None:
    lines = edit_preview({"file_path": "a.py", "old_string": "x = 1\ny = 2\nz = 3",
                          "new_string": "x = 1\ny = 20\nz = 3"})
    assert ("red", "-y = 2") in lines and ("green", "+y = 20") in lines
    assert ("dim", " x = 1") in lines  # one line of context


def test_edit_preview_shows_the_changed_lines_of_a_patch_and_caps_them() -> None:
    patch = "*** Begin Patch\n*** Update File: a.py\n@@\n-old\n+new\n keep\n*** End Patch"
    assert edit_preview({"patch": patch}) == [("bold", "*** Update File: a.py"), ("red", "-old"),
                                              ("green", "+new")]
    big = "*** Begin Patch\n*** Add File: b.txt\n" + "".join(f"+line {i}\n" for i in range(30)) + "*** End Patch"
    capped = edit_preview({"input": big}, max_lines=5)
    assert len(capped) == 6 and capped[-1] == ("dim", "… 26 more diff lines")


def test_edit_preview_is_empty_for_other_calls() -> None:
    assert edit_preview({"command": "ls"}) == []
    assert edit_preview({"file_path": "a.py", "content": "x"}) == []
