"""Properties of the diagnostics after edits over generated Python: a valid file adds nothing (the
write's result is byte-identical), and an unbalanced ``(`` put at the start of any line is
reported at a line of the file. ``CODELOOP_PROPERTY_EXAMPLES`` sets the number of examples."""

from __future__ import annotations

import asyncio
import re
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from codeloop.environments.local import LocalExecutionEnvironment
from codeloop.tools import execute_tool_call
from codeloop.tools.diagnostics import Diagnostics, format_problems, introduced_problems
from codeloop.tools.sets import all_tools_registry

from .test_edit_properties import PROPERTY

NAMES = st.sampled_from(["a", "b", "x", "value", "items", "_t", "résumé"])
TEXTS = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=8)
EXPRESSIONS = st.recursive(
    st.one_of(NAMES, st.integers(-999, 10**6).map(str), TEXTS.map(repr), st.sampled_from(["None", "True", "[]"])),
    lambda inner: st.one_of(
        st.tuples(inner, st.sampled_from(["+", "-", "*", "==", " and ", " or ", " if x else "]), inner)
        .map(lambda t: f"{t[0]} {t[1].strip()} {t[2]}"),
        st.lists(inner, max_size=3).map(lambda items: "[" + ", ".join(items) + "]"),
        st.tuples(NAMES, st.lists(inner, max_size=3)).map(lambda t: f"{t[0]}({', '.join(t[1])})"),
        inner.map(lambda e: f"({e})"),
        st.tuples(inner, inner).map(lambda t: "{" + f"{t[0]}: {t[1]}" + "}"),
    ),
    max_leaves=6,
)
SIMPLE = st.one_of(
    st.tuples(NAMES, EXPRESSIONS).map(lambda t: f"{t[0]} = {t[1]}"),
    EXPRESSIONS.map(lambda e: f"print({e})"),
    st.just("pass"),
    st.tuples(NAMES, st.integers(0, 9)).map(lambda t: f"{t[0]} += {t[1]}"),
)


def _indent(lines: list[str]) -> list[str]:
    return ["    " + line if line else line for line in lines]


BLOCKS = st.recursive(
    st.lists(SIMPLE, min_size=1, max_size=4),
    lambda inner: st.lists(st.one_of(
        SIMPLE.map(lambda s: [s]),
        st.tuples(NAMES, st.lists(NAMES, max_size=3, unique=True), inner, EXPRESSIONS).map(
            lambda t: [f"def {t[0]}({', '.join(t[1])}):", *_indent(t[2]), f"    return {t[3]}"]),
        st.tuples(EXPRESSIONS, inner, st.none() | inner).map(
            lambda t: [f"if {t[0]}:", *_indent(t[1]), *(["else:", *_indent(t[2])] if t[2] else [])]),
        st.tuples(NAMES, st.integers(0, 5), inner).map(lambda t: [f"for {t[0]} in range({t[1]}):", *_indent(t[2])]),
        st.tuples(NAMES, inner).map(lambda t: [f"class {t[0].capitalize()}:", *_indent(t[1]), ""]),
    ), min_size=1, max_size=4).map(lambda blocks: [line for block in blocks for line in block]),
    max_leaves=6,
)
SOURCES = BLOCKS.map(lambda lines: "\n".join(lines) + "\n")


@PROPERTY
@given(SOURCES)
def test_valid_python_gets_no_diagnostic_and_the_write_result_is_unchanged(source: str) -> None:
    compile(source, "gen.py", "exec")  # the generator makes valid Python only
    assert introduced_problems("gen.py", None, source.encode()) == []
    plain, watched = asyncio.run(_writes(source))
    assert watched == plain


@PROPERTY
@given(SOURCES, st.data())
def test_an_unbalanced_paren_at_any_line_is_reported_at_a_line_of_the_file(source: str, data: st.DataObject) -> None:
    lines = source.split("\n")[:-1]
    at = data.draw(st.integers(0, len(lines) - 1), label="line")
    indent = len(lines[at]) - len(lines[at].lstrip())
    lines[at] = lines[at][:indent] + "(" + lines[at][indent:]
    broken = "\n".join(lines) + "\n"
    text = format_problems("gen.py", introduced_problems("gen.py", source.encode(), broken.encode()))
    reported = [int(n) for n in re.findall(r"^  line (\d+), column \d+: ", text, re.MULTILINE)]
    assert reported, text
    assert all(1 <= n <= len(lines) for n in reported), (reported, len(lines), text)


async def _writes(source: str) -> tuple[str, str]:
    """write_file's result for ``source`` without, then with the diagnostics step."""
    with tempfile.TemporaryDirectory() as scratch:
        env = LocalExecutionEnvironment(Path(scratch))
        await env.initialize()
        try:
            registry = all_tools_registry()
            args = {"file_path": "gen.py", "content": source}
            plain = await execute_tool_call(registry, "write_file", args, env)
            (Path(scratch) / "gen.py").unlink()
            watched = await execute_tool_call(registry, "write_file", args, env, watch=Diagnostics().watch)
            return plain.full_output, watched.full_output
        finally:
            await env.cleanup()
