"""No list of tool names outside the module that defines the tool (issue 30, docs/architecture.md
"Effects and the checkpoint seam").

What a call may do is its tool's declaration (``codeloop.tools.effects``); code that must know
"does this call change files, and which" reads it. This test reads src/ with ``ast`` and fails
on a string literal equal to a registered tool's name that is compared against (``==``, ``!=``,
``in``, ``is``, ``match``/``case``) or collected into a list, set, tuple or dict literal anywhere
outside a module that defines a tool of that name. The same word with another meaning (the
``grep`` command, the spaces wire's ``shell`` operation) is a named exception with its reason,
and an exception that no longer applies fails too, so the list stays true.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from typing import Any, cast

import pytest

from codeloop.agent.subagents import SubagentManager, subagent_tools
from codeloop.spaces.policy_config import build_policy
from codeloop.tools.index_tools import index_tools
from codeloop.tools.jobs import JobTable, add_job_tools
from codeloop.tools.registry import RegisteredTool, ToolRegistry
from codeloop.tools.relay_tools import RELAY_TOOLS
from codeloop.tools.sets import all_tools
from codeloop.tools.space_tools import space_registry

SRC = Path(__file__).resolve().parent.parent / "src" / "codeloop"

EXCEPTIONS: dict[tuple[str, str], str] = {
    ("policy/shell.py", "grep"): "the grep program in the list of read-only commands, not the tool",
    ("policy/shell.py", "wait"): "bash's `wait -v NAME` builtin, which sets a variable (not the job tool)",
    ("spaces/operations.py", "shell"): "the spaces wire's operation types (spec), which the engine's tools are named after",
    ("spaces/operations.py", "readFile"): "the spaces wire's operation types (spec)",
    ("spaces/operations.py", "createFile"): "the spaces wire's operation types (spec)",
    ("spaces/operations.py", "editFile"): "the spaces wire's operation types (spec)",
    ("spaces/operations.py", "deleteFile"): "the spaces wire's operation types (spec)",
    ("relay/commands.py", "CREATE_FILE"): "the relay protocol's command words (spec), which the relay's tools are named after",
    ("relay/commands.py", "EDIT_FILE"): "the relay protocol's command words (spec)",
    ("relay/commands.py", "DELETE_FILE"): "the relay protocol's command words (spec)",
    ("relay/commands.py", "READ_FILE"): "the relay protocol's command words (spec)",
    ("relay/commands.py", "RUN_COMMAND"): "the relay protocol's command words (spec)",
    **{("relay/parser.py", word): "the relay protocol's command words, read from an inbox file (spec)"
       for word in ("CREATE_FILE", "EDIT_FILE", "DELETE_FILE", "READ_FILE", "RUN_COMMAND")},
    ("relay/serializer.py", "RUN_COMMAND"): "the relay protocol's command word, written to an outbox (spec)",
    ("tools/truncation.py", "spawn_agent"): "the loop spec's default output limit of the subagent tool (§5.2), "
    "which agent/ defines above tools/ (so tools/ cannot import its name)",
    ("tools/suggestions.py", "search_code"): "a name models invent when the index tools are absent, mapped to "
    "grep (the index tools' module would load the index for every pipeline)",
    ("codali/needs.py", "glob"): "an argument alias of the `file.list` need (`glob` for `pattern`)",
    ("environments/factory.py", "shell"): "the `shell` keyword argument (the shell program of an environment)",
    ("environments/remote_search.py", "grep"): "the remote search helper's operation, not the tool",
}
"""(module, name) pairs where the word is not a reference to the tool, each with its reason."""


def registered_tools(tmp_path: Path) -> list[RegisteredTool]:
    """Every tool codeloop registers under a fixed name: the built-in families, the job tools, the
    index tools, the subagent tools, and the relay's and spaces' tools. (MCP tools are named by
    their server at run time: no literal can name them.)"""
    jobs = ToolRegistry.of(all_tools())
    add_job_tools(jobs, JobTable())
    manager = cast(SubagentManager, object())
    spaces = space_registry(build_policy({"preset": "standard"}))
    return [*all_tools(), *(t for n in jobs.names() if (t := jobs.get(n))), *index_tools(tmp_path),
            *subagent_tools(manager), *(t for n in RELAY_TOOLS.names() if (t := RELAY_TOOLS.get(n))),
            *(t for n in spaces.names() if (t := spaces.get(n)))]


def defining_modules(tools: list[RegisteredTool]) -> dict[str, set[str]]:
    """Tool name -> the src/ modules whose code runs it (where its executor is defined)."""
    found: dict[str, set[str]] = {}
    for tool in tools:
        path = Path(inspect.getfile(cast(Any, tool.executor))).resolve()
        found.setdefault(tool.name, set()).add(path.relative_to(SRC).as_posix())
    return found


def _names_in(node: ast.AST, names: set[str]) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names:
        return [node.value]
    return []


def name_uses(tree: ast.Module, names: set[str]) -> list[tuple[int, str, str]]:
    """(line, name, how) for each tool-name literal compared against or collected in a literal."""
    found: list[tuple[int, str, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for side in (node.left, *node.comparators):
                found += [(node.lineno, n, "compared") for n in _names_in(side, names)]
        elif isinstance(node, ast.MatchValue):
            found += [(node.lineno, n, "matched") for n in _names_in(node.value, names)]
        elif isinstance(node, ast.List | ast.Set | ast.Tuple):
            for element in node.elts:
                found += [(node.lineno, n, "collected") for n in _names_in(element, names)]
        elif isinstance(node, ast.Dict):
            for part in (*node.keys, *node.values):
                if part is not None:
                    found += [(node.lineno, n, "collected") for n in _names_in(part, names)]
    return found


def violations(modules: dict[str, set[str]]) -> tuple[list[str], set[tuple[str, str]]]:
    """The findings outside the defining modules, and the exceptions that were used."""
    names = set(modules)
    found, used = [], set()
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        for line, name, how in name_uses(ast.parse(path.read_text("utf-8"), str(path)), names):
            if rel in modules[name]:
                continue
            if (rel, name) in EXCEPTIONS:
                used.add((rel, name))
                continue
            found.append(f"{rel}:{line}: tool name {name!r} {how} (read the tool's declaration, "
                         "codeloop.tools.effects, or name it through its defining module)")
    return found, used


@pytest.fixture(scope="module")
def modules(tmp_path_factory: pytest.TempPathFactory) -> dict[str, set[str]]:
    return defining_modules(registered_tools(tmp_path_factory.mktemp("repo")))


def test_no_tool_name_is_listed_or_compared_outside_the_module_that_defines_it(modules: dict[str, set[str]]) -> None:
    found, used = violations(modules)
    assert found == [], "\n".join(found)
    assert set(EXCEPTIONS) <= used, f"exceptions that no longer apply: {sorted(set(EXCEPTIONS) - used)}"


def test_the_scanner_sees_every_form_of_a_listed_tool_name() -> None:
    source = '''
if call.name == "shell": pass
if "write_file" != name: pass
ok = name in ("edit_file", "x")
WRITERS = {"apply_patch"}
LIMITS = {"grep": 1}
listed = ["glob"]
match call.name:
    case "read_file": pass
registry.get("shell")          # an argument: fine
ToolCall("1", "shell", {})     # an argument: fine
text = "shell"                 # an assignment: fine
'''
    names = {"shell", "write_file", "edit_file", "apply_patch", "grep", "glob", "read_file"}
    found = name_uses(ast.parse(source), names)
    assert sorted(n for _, n, _ in found) == ["apply_patch", "edit_file", "glob", "grep", "read_file", "shell",
                                              "write_file"]


def test_every_registered_tool_has_a_defining_module_in_src(modules: dict[str, set[str]]) -> None:
    assert {"shell", "write_file", "apply_patch", "spawn_agent", "job_input", "search_code", "RUN_COMMAND",
            "createFile"} <= set(modules)
    assert modules["write_file"] == {"tools/files.py"}
    assert modules["shell"] == {"tools/shell.py", "tools/jobs.py", "tools/space_tools.py"}
