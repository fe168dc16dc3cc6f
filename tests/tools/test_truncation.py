"""Truncation exactly as loop spec §5.1–5.3."""

from __future__ import annotations

from codeloop.tools.truncation import (
    DEFAULT_LINE_LIMITS,
    DEFAULT_TOOL_LIMITS,
    TruncationConfig,
    truncate_lines,
    truncate_output,
    truncate_tool_output,
)


def test_5_1_short_output_is_unchanged() -> None:
    assert truncate_output("abc", 3, "head_tail") == "abc"
    assert truncate_output("abc", 3, "tail") == "abc"


def test_5_1_head_tail_marker_text() -> None:
    out = truncate_output("A" * 10 + "B" * 10, 10, "head_tail")
    assert out == (
        "AAAAA\n\n[WARNING: Tool output was truncated. 10 characters were removed from the middle. "
        "The full output is available in the event stream. "
        "If you need to see specific parts, re-run the tool with more targeted parameters.]\n\nBBBBB"
    )


def test_5_1_tail_marker_text() -> None:
    out = truncate_output("0123456789", 4, "tail")
    assert out == (
        "[WARNING: Tool output was truncated. First 6 characters were removed. "
        "The full output is available in the event stream.]\n\n6789"
    )


def test_5_1_zero_limit_keeps_nothing_of_the_text() -> None:
    assert truncate_output("xyz", 0, "tail").endswith("\n\n")
    assert "xyz" not in truncate_output("xyz", 0, "head_tail")


def test_5_2_default_character_limits_match_the_table() -> None:
    assert DEFAULT_TOOL_LIMITS["read_file"] == 50_000
    assert DEFAULT_TOOL_LIMITS["shell"] == 30_000
    assert DEFAULT_TOOL_LIMITS["grep"] == 20_000
    assert DEFAULT_TOOL_LIMITS["glob"] == 20_000
    assert DEFAULT_TOOL_LIMITS["edit_file"] == 10_000
    assert DEFAULT_TOOL_LIMITS["apply_patch"] == 10_000
    assert DEFAULT_TOOL_LIMITS["write_file"] == 1_000
    assert DEFAULT_TOOL_LIMITS["spawn_agent"] == 20_000


def test_5_3_default_line_limits_match_the_table() -> None:
    assert DEFAULT_LINE_LIMITS["shell"] == 256
    assert DEFAULT_LINE_LIMITS["grep"] == 200
    assert DEFAULT_LINE_LIMITS["glob"] == 500
    assert DEFAULT_LINE_LIMITS["read_file"] is None
    assert DEFAULT_LINE_LIMITS["edit_file"] is None


def test_5_3_truncate_lines_head_tail_split() -> None:
    text = "\n".join(str(i) for i in range(10))
    assert truncate_lines(text, 4) == "0\n1\n[... 6 lines omitted ...]\n8\n9"
    assert truncate_lines(text, 10) == text


def test_5_3_ten_megabyte_single_line_is_cut_by_characters_first() -> None:
    line = "x" * 10_000_000
    out = truncate_tool_output(line, "shell")
    assert len(out) < 30_000 + 400
    assert "9970000 characters were removed from the middle" in out


def test_5_3_characters_then_lines_for_shell() -> None:
    text = "\n".join(f"line {i}" for i in range(1000))
    out = truncate_tool_output(text, "shell")
    assert "[... 744 lines omitted ...]" in out
    assert out.startswith("line 0\n") and out.endswith("line 999")


def test_5_3_grep_uses_tail_mode() -> None:
    text = "m" * 25_000
    out = truncate_tool_output(text, "grep")
    assert out.startswith("[WARNING: Tool output was truncated. First 5000 characters were removed.")


def test_5_2_limits_are_overridable() -> None:
    config = TruncationConfig(tool_output_limits={"read_file": 10}, tool_line_limits={"shell": None})
    assert "characters were removed" in truncate_tool_output("y" * 50, "read_file", config)
    many = "\n".join("a" for _ in range(300))
    assert truncate_tool_output(many, "shell", config) == many
    tight = TruncationConfig(tool_line_limits={"read_file": 2})
    assert truncate_tool_output("1\n2\n3\n4", "read_file", tight) == "1\n[... 2 lines omitted ...]\n4"


def test_unknown_tools_get_a_fallback_limit() -> None:
    out = truncate_tool_output("z" * 100_000, "my_custom_tool")
    assert len(out) < 31_000
