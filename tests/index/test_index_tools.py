"""search_code, find_symbol and impact as a model calls them: through execute_tool_call."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeloop.environments.local import LocalExecutionEnvironment
from codeloop.tools.index_tools import index_tools
from codeloop.tools.pipeline import execute_tool_call
from codeloop.tools.registry import ToolRegistry


@pytest.fixture
def registry(sample_repo: Path) -> ToolRegistry:
    return ToolRegistry.of(index_tools(sample_repo))


@pytest.fixture
def env(sample_repo: Path) -> LocalExecutionEnvironment:
    return LocalExecutionEnvironment(sample_repo)


async def test_search_code_builds_the_index_and_finds_lines(registry: ToolRegistry,
                                                            env: LocalExecutionEnvironment) -> None:
    result = await execute_tool_call(registry, "search_code", {"query": "flux capacitor"}, env)
    assert not result.is_error
    assert result.output.startswith("docs/guide.md:7  [Installation]\n")
    assert "Run the flux capacitor setup." in result.output


async def test_search_code_substring_and_path_filter(registry: ToolRegistry, env: LocalExecutionEnvironment) -> None:
    result = await execute_tool_call(registry, "search_code", '{"query": "helpers.boot(", "path": "pkg"}', env)
    assert result.output.split("\n")[0] == "pkg/core.py:7  [Engine]"
    none = await execute_tool_call(registry, "search_code", {"query": "helpers.boot(", "path": "web"}, env)
    assert none.output == "No matches for 'helpers.boot('."


async def test_find_symbol_reports_location_kind_and_range(registry: ToolRegistry,
                                                           env: LocalExecutionEnvironment) -> None:
    result = await execute_tool_call(registry, "find_symbol", {"name": "Server.Handle"}, env)
    assert result.output == "go/main.go:10:1 method Server.Handle (lines 10-10)"


async def test_find_symbol_sees_files_written_after_the_first_call(
        registry: ToolRegistry, env: LocalExecutionEnvironment, sample_repo: Path) -> None:
    await execute_tool_call(registry, "find_symbol", {"name": "Engine"}, env)
    await env.write_file("pkg/extra.py", "def added_later():\n    return 1\n")
    result = await execute_tool_call(registry, "find_symbol", {"name": "added_later"}, env)
    assert result.output.startswith("pkg/extra.py:1:1 function added_later")


async def test_impact_lists_inbound_outbound_and_unresolved(registry: ToolRegistry,
                                                            env: LocalExecutionEnvironment) -> None:
    result = await execute_tool_call(registry, "impact", {"path": "pkg/helpers.py"}, env)
    assert result.output == (
        "Imported by (1):\n  pkg/core.py\nImports (0):\nNot resolved to repository files:\n"
        "  line 1: requests (external)\n  line 2: .nothere (unresolved)")


async def test_unknown_file_is_an_error_result_the_model_can_read(registry: ToolRegistry,
                                                                  env: LocalExecutionEnvironment) -> None:
    result = await execute_tool_call(registry, "impact", {"path": "no/such.py"}, env)
    assert result.is_error and "no/such.py is not in the index" in result.output


async def test_bad_arguments_are_rejected_by_the_pipeline(registry: ToolRegistry,
                                                          env: LocalExecutionEnvironment) -> None:
    result = await execute_tool_call(registry, "search_code", {"query": "x", "limit": 0}, env)
    assert result.is_error and "limit" in result.output
    missing = await execute_tool_call(registry, "find_symbol", {}, env)
    assert missing.is_error and "name" in missing.output
