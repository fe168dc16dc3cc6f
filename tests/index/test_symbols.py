"""Definitions from tree-sitter for every supported language, with stable ids."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeloop.environments.errors import PathOutsideWorkspaceError
from codeloop.index import CodeIndex

EXPECTED = {
    ("pkg/core.py", "class", "Engine"), ("pkg/core.py", "method", "Engine.start"), ("pkg/core.py", "function", "run"),
    ("pkg/models.py", "variable", "LIMIT"),
    ("web/src/main.ts", "function", "main"), ("web/src/main.ts", "interface", "Props"),
    ("web/src/main.ts", "class", "App"), ("web/src/main.ts", "method", "App.render"),
    ("web/src/util.ts", "function", "util"), ("web/src/view.tsx", "function", "View"),
    ("go/main.go", "struct", "Server"), ("go/main.go", "method", "Server.Handle"), ("go/main.go", "function", "main"),
    ("go/store/store.go", "interface", "Store"),
    ("rust/src/lib.rs", "struct", "Config"), ("rust/src/lib.rs", "method", "Config.new"),
    ("rust/src/lib.rs", "trait", "Greet"), ("rust/src/parser.rs", "method", "Parser.parse"),
    ("java/App.java", "class", "App"), ("java/App.java", "method", "App.run"), ("java/App.java", "field", "App.count"),
    ("c/util.c", "function", "add"), ("c/util.c", "struct", "point"), ("c/util.c", "macro", "MAX"),
    ("cpp/shape.cpp", "namespace", "geo"), ("cpp/shape.cpp", "class", "geo.Shape"),
    ("cpp/shape.cpp", "method", "geo.Shape.area"),
    ("scripts/deploy.sh", "function", "deploy"), ("scripts/deploy.sh", "variable", "TARGET"),
}


def test_definitions_of_all_languages(built: CodeIndex) -> None:
    found = {(s.path, s.kind, s.qualified_name) for s in built.symbols()}
    missing = EXPECTED - found
    assert not missing, f"missing definitions: {sorted(missing)}"


def test_symbol_ranges_are_one_based_lines_and_zero_based_columns(built: CodeIndex) -> None:
    (start,) = built.symbols("pkg/core.py", name="Engine.start")
    assert (start.start_line, start.start_column, start.end_line) == (6, 4, 7)
    assert start.language == "python"


def test_symbol_ids_survive_lines_moving(built: CodeIndex, sample_repo: Path) -> None:
    before = {s.id: s.start_line for s in built.symbols("pkg/core.py")}
    path = sample_repo / "pkg" / "core.py"
    path.write_text("# a new comment\n# another\n" + path.read_text())
    built.build()
    after = {s.id: s.start_line for s in built.symbols("pkg/core.py")}
    assert after.keys() == before.keys()
    assert all(after[k] == before[k] + 2 for k in before)


def test_find_by_short_or_qualified_name_case_insensitive(built: CodeIndex) -> None:
    assert [s.path for s in built.symbols(name="handle")] == ["go/main.go"]
    assert [s.id for s in built.symbols(name="Shape.area")] == ["cpp/shape.cpp::geo.Shape.area"]
    assert {s.kind for s in built.symbols(name="Config")} == {"struct", "impl"}
    assert [s.qualified_name for s in built.symbols(kind="interface")] == ["Store", "Props"]


def test_ast_of_a_file_is_bounded(built: CodeIndex) -> None:
    tree = built.ast("pkg/core.py", max_depth=2)
    assert tree["language"] == "python" and tree["root"]["type"] == "module"
    kinds = [c["type"] for c in tree["root"]["children"]]
    assert kinds[:3] == ["import_statement", "import_from_statement", "import_from_statement"]
    assert "class_definition" in kinds
    small = built.ast("pkg/core.py", max_nodes=3)
    assert small["truncated"]


def test_ast_refuses_paths_outside_the_repository(built: CodeIndex) -> None:
    with pytest.raises(PathOutsideWorkspaceError):
        built.ast("../outside.py")


def test_ast_of_a_document_is_a_clear_error(built: CodeIndex) -> None:
    with pytest.raises(ValueError, match="not one of the indexed grammars"):
        built.ast("docs/guide.md")


def test_a_shell_script_with_a_code_point_over_255_after_a_brace_is_indexed(tmp_path: Path) -> None:
    """tree-sitter-bash's scanner crashed on `{` followed by U+10FFFF (isdigit out of bounds):
    indexing such a script must not take the process down. Run in a child so a crash fails
    this test instead of killing the worker."""
    import subprocess
    import sys

    script = (
        "from codeloop.index.builder import parse_file\n"
        "from codeloop.index.ast_dump import syntax_tree\n"
        "data = ('greet() {\\n  echo {' + chr(0x10FFFF) + '- done\\n}\\n').encode()\n"
        "parsed = parse_file('run.sh', data)\n"
        "assert [s.name for s in parsed.symbols] == ['greet'], parsed.symbols\n"
        "assert parsed.text == data.decode()\n"
        "assert syntax_tree('run.sh', data)['language'] == 'bash'\n"
        "print('indexed')\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "indexed", (done.returncode, done.stderr[-2000:])
