"""Diagnostics after edits (codeloop.tools.diagnostics): the syntax check of each language, only
errors an edit introduced, through the pipeline's WATCH step with real files, and the opt-in
commands (quoting, output, a hanging one killed at its timeout)."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path
from typing import Any

from codeloop.tools import execute_tool_call
from codeloop.tools.diagnostics import (
    MAX_PROBLEMS,
    DiagnosticCommand,
    Diagnostics,
    format_problems,
    introduced_problems,
    syntax_problems,
)

from .workspace_fixture import Workspace


def problems_text(path: str, source: str, before: str | None = None) -> str:
    old = before.encode() if before is not None else None
    return format_problems(path, introduced_problems(path, old, source.encode()))


# -- the syntax check per language ------------------------------------------------------------


def test_python_indent_error_names_the_line_and_the_compile_message() -> None:
    text = problems_text("pkg/app.py", "import os\n\ndef f():\nreturn os.sep\n")
    assert text.startswith("\n\n[diagnostics] pkg/app.py does not parse after this edit:\n")
    assert "line 4, column 1: expected an indented block after function definition on line 3" in text
    assert "(Python: IndentationError)" in text and "    4 | return os.sep" in text


def test_python_unexpected_indent_and_unclosed_paren() -> None:
    assert re.search(r"line 2, column \d: unexpected indent", problems_text("a.py", "x = 1\n    y = 2\n"))
    text = problems_text("a.py", "x = 1\nprint((x + 1\ny = 2\n")
    assert "line 2" in text and "'(' was never closed" in text


def test_javascript_unclosed_bracket() -> None:
    text = problems_text("web/app.js", "function f() {\n  let x = (1 + 2;\n  return x;\n}\n")
    assert 'line 2, column 17: missing ")"' in text and "    2 |   let x = (1 + 2;" in text
    assert 'line 1, column 16: missing "]"' in problems_text("a.ts", "const a = [1, 2;\n")


def test_go_and_rust_missing_brace() -> None:
    go = problems_text("main.go", "package main\n\nfunc main() {\n\tx := 1\n\t_ = x\n")
    assert 'missing "}" at the end of the file' in go and "line 5" in go
    rust = problems_text("src/main.rs", "fn main() {\n    let x = 1;\n    println!(\"{}\", x);\n")
    assert '"{" is never closed' in rust and "line 1, column 11" in rust


def test_other_languages_are_checked_too() -> None:
    assert 'missing ";"' in problems_text("A.java", "class A { void f() { int x = 1 } }\n")
    assert 'missing "}"' in problems_text("a.c", "int main(void) { return 0;\n")
    assert "missing" in problems_text("run.sh", "if true; then\n  echo hi\n")


def test_a_cpp_header_named_h_is_no_c_error() -> None:
    header = "#pragma once\nnamespace app {\nclass Cache {\n public:\n  int get(const std::string& k) const;\n};\n}\n"
    assert problems_text("cache.h", header) == "" and problems_text("cache.hpp", header) == ""
    assert 'missing "}"' in problems_text("cache.h", header.replace("};", ""))


def test_a_file_that_was_already_broken_gets_no_new_noise() -> None:
    broken = "def f(:\n    return 1\n"
    assert problems_text("a.py", broken + "x = (\n", before=broken) == ""
    assert problems_text("a.js", "let x = (1;\nlet y = [2;\n", before="let x = (1;\n") == ""
    # the same text as a new file, or after a clean one, is reported
    assert "line 1" in problems_text("a.py", broken)
    assert "line 1" in problems_text("a.py", broken, before="x = 1\n")


def test_unknown_extensions_and_clean_files_give_nothing() -> None:
    for path in ("notes.txt", "README.md", "Makefile", "data.json", "a.py.orig"):
        assert syntax_problems(path, b"def f(:\n") is None
        assert problems_text(path, "def f(:\n") == ""
    for path, source in [("a.py", "def f():\n    return 1\n"), ("a.js", "const f = () => [1, 2];\n"),
                         ("a.go", "package main\n\nfunc main() {}\n"), ("a.rs", "fn main() {}\n"),
                         ("a.py", "x = 'a\\d'\n")]:  # a SyntaxWarning is no error
        assert syntax_problems(path, source.encode()) == []
        assert problems_text(path, source) == ""


def test_at_most_a_few_problems_are_listed_and_the_rest_counted() -> None:
    source = "".join(f"let v{i} = (1;\nlet w{i} = 2;\n" for i in range(8))
    text = problems_text("a.js", source)
    assert text.count("missing") == MAX_PROBLEMS and re.search(r"\.\.\. and \d+ more", text)


def test_python_grammar_gaps_do_not_count_when_compile_accepts_the_file() -> None:
    # compile() judges Python: whatever the grammar makes of valid code, nothing is reported
    source = "match x:\n    case [1, *rest] if rest:\n        pass\n"
    assert syntax_problems("a.py", source.encode()) == []


# -- through the pipeline (the WATCH step the agent's Session passes) -------------------------


async def call(ws: Workspace, name: str, args: dict[str, Any], diagnostics: Diagnostics | None) -> str:
    outcome = await execute_tool_call(ws.registry, name, args, ws.env,
                                      watch=diagnostics.watch if diagnostics else None)
    return outcome.output


async def test_a_clean_write_or_edit_is_byte_identical_with_and_without_diagnostics(ws: Workspace) -> None:
    on = Diagnostics()
    for diagnostics in (None, on):
        ws.write("a.py", "x = 1\n")
        results = [
            await call(ws, "write_file", {"file_path": "b.py", "content": "def f():\n    return 2\n"}, diagnostics),
            await call(ws, "edit_file", {"file_path": "a.py", "old_string": "x = 1", "new_string": "x = 3"},
                       diagnostics),
            await call(ws, "apply_patch", {"patch": "*** Begin Patch\n*** Add File: c.go\n+package c\n*** End Patch\n"},
                       diagnostics),
        ]
        (ws.root / "b.py").unlink()
        (ws.root / "c.go").unlink()
        if diagnostics is None:
            plain = results
    assert results == plain


async def test_edits_that_break_a_file_are_reported_by_each_edit_tool(ws: Workspace) -> None:
    on = Diagnostics()
    text = await call(ws, "write_file", {"file_path": "src/app.py", "content": "def f():\nreturn 1\n"}, on)
    assert text.startswith("Wrote ") or "src/app.py" in text.split("\n")[0]
    assert "[diagnostics] src/app.py does not parse after this edit:" in text and "line 2, column 1" in text

    ws.write("b.js", "function f() {\n  return [1, 2];\n}\n")
    text = await call(ws, "edit_file", {"file_path": "b.js", "old_string": "[1, 2]", "new_string": "[1, 2"}, on)
    assert '[diagnostics] b.js does not parse' in text and 'line 2' in text

    patch = "*** Begin Patch\n*** Add File: m.rs\n+fn main() {\n+    let x = 1;\n*** End Patch\n"
    text = await call(ws, "apply_patch", {"patch": patch}, on)
    assert "[diagnostics] m.rs does not parse" in text and '"{" is never closed' in text


async def test_an_edit_of_an_already_broken_file_or_a_failed_edit_adds_nothing(ws: Workspace) -> None:
    on = Diagnostics()
    ws.write("old.py", "def f(:\n    return 1\n")
    text = await call(ws, "edit_file", {"file_path": "old.py", "old_string": "return 1", "new_string": "return (2"}, on)
    assert "diagnostics" not in text
    text = await call(ws, "edit_file", {"file_path": "old.py", "old_string": "not there", "new_string": "("}, on)
    assert "diagnostics" not in text
    # the file is fixed, then broken again: that is reported
    ws.write("old.py", "def f():\n    return 1\n")
    text = await call(ws, "edit_file", {"file_path": "old.py", "old_string": "return 1", "new_string": "return (2"}, on)
    assert "[diagnostics] old.py" in text


async def test_unknown_files_and_other_tools_are_not_even_read(ws: Workspace) -> None:
    checks: list[str] = []

    class Counting(Diagnostics):
        def checked(self, path: str) -> bool:
            checks.append(path)
            return super().checked(path)

    reads: list[str] = []
    real_read = ws.env.read_bytes

    async def read_bytes(path: str) -> bytes:
        reads.append(path)
        return await real_read(path)

    ws.env.read_bytes = read_bytes  # type: ignore[method-assign]
    on = Counting()
    text = await call(ws, "write_file", {"file_path": "notes.txt", "content": "def f(:\n"}, on)
    assert "diagnostics" not in text and reads == []  # write_file reads nothing of a new file; nor did the watch
    ws.write("x.py", "def f(:\n")
    await call(ws, "read_file", {"file_path": "x.py"}, on)
    assert checks == ["notes.txt"]


# -- commands ---------------------------------------------------------------------------------


async def test_a_command_runs_on_the_edited_file_and_its_output_is_appended(ws: Workspace) -> None:
    warnings: list[str] = []
    check = DiagnosticCommand("python3 -m py_compile {file}", paths=("*.py",))
    on = Diagnostics([check], warnings.append)
    clean = await call(ws, "write_file", {"file_path": "ok.py", "content": "x = 1\n"}, None)
    assert await call(ws, "write_file", {"file_path": "ok2.py", "content": "x = 1\n"}, on) == clean.replace("ok", "ok2")
    text = await call(ws, "write_file", {"file_path": "bad.py", "content": "x = (\n"}, on)
    assert "[diagnostics `python3 -m py_compile bad.py`: exit code 1]" in text and "SyntaxError" in text
    assert "[diagnostics] bad.py does not parse" in text  # the syntax check runs as well
    # paths limit a command to its files
    text = await call(ws, "write_file", {"file_path": "a.js", "content": "let x = 1;\n"}, on)
    assert "py_compile" not in text and warnings == []


async def test_file_names_are_shell_quoted(ws: Workspace) -> None:
    marker = ws.root / "injected"
    on = Diagnostics([DiagnosticCommand("echo checked {file}; exit 3", paths=("*",))])
    for name in ("my file.py", "x;touch injected;.py", "$(touch injected).py", "-rf.py", "a'b.py"):
        text = await call(ws, "write_file", {"file_path": name, "content": "x = 1\n"}, on)
        shown = name if not name.startswith("-") else "./" + name
        assert f"checked {shown}\n" in text + "\n" and "exit code 3" in text, text
        assert not marker.exists()


async def test_a_silent_successful_command_adds_nothing_and_output_is_capped(ws: Workspace) -> None:
    on = Diagnostics([DiagnosticCommand("true"), DiagnosticCommand("python3 -c 'print(\"w\" * 5000)'")])
    text = await call(ws, "write_file", {"file_path": "a.py", "content": "x = 1\n"}, on)
    assert "`true`" not in text and "characters of output omitted" in text
    assert len(text.split("[diagnostics `python3")[1]) < 700


async def test_a_hanging_command_is_killed_at_its_timeout_with_a_warning(ws: Workspace) -> None:
    pids = ws.root.parent / "pids"
    warnings: list[str] = []
    hang = DiagnosticCommand(f"sleep 300 & echo $! >> {pids}; echo $$ >> {pids}; sleep 300", timeout=1,
                             source="config.toml:3")
    on = Diagnostics([hang], warnings.append)
    plain = await call(ws, "write_file", {"file_path": "a.py", "content": "x = 1\n"}, None)
    started = time.monotonic()
    text = await call(ws, "write_file", {"file_path": "b.py", "content": "x = 1\n"}, on)
    assert time.monotonic() - started < 15
    assert text == plain.replace("a.py", "b.py")
    assert len(warnings) == 1 and "ran past its timeout of 1 s and was killed" in warnings[0]
    assert "config.toml:3" in warnings[0]
    await asyncio.sleep(0.2)
    alive = [p for p in map(int, pids.read_text().split()) if _alive(p)]
    assert not alive, f"diagnostics processes survived: {alive}"


async def test_a_command_that_cannot_run_is_a_warning_not_a_failed_call(ws: Workspace, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    async def broken(*args: Any, **kwargs: Any) -> Any:
        raise OSError("no shell")  # e.g. the sandbox went away

    monkeypatch.setattr(ws.env, "exec_command", broken)
    warnings: list[str] = []
    on = Diagnostics([DiagnosticCommand("true")], warnings.append)
    text = await call(ws, "write_file", {"file_path": "a.py", "content": "x = 1\n"}, on)
    assert text.startswith("Wrote") and "`true` could not run: no shell" in warnings[0]


def _alive(pid: int) -> bool:
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False
