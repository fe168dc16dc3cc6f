"""Approval modes through the real tool pipeline, with real commands in a real workspace."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeloop.environments.local import LocalExecutionEnvironment
from codeloop.llm.types import ToolDefinition
from codeloop.policy import (
    ApprovalsFileError,
    ApprovalStore,
    approval_policy,
    remembering,
)
from codeloop.policy.model import Decision
from codeloop.policy.pending import PendingCall, PendingStore, SqlitePendingStore
from codeloop.tools.call_path import PipelineCall, build_pipeline
from codeloop.tools.effects import writes
from codeloop.tools.files import read_file_tool, write_file_tool
from codeloop.tools.index_tools import index_tools
from codeloop.tools.pipeline import execute_tool_call
from codeloop.tools.registry import RegisteredTool, ToolRegistry, make_tool
from codeloop.tools.sets import all_tools, all_tools_registry
from codeloop.tools.shell import shell_tool


async def _echo(args: dict[str, object], env: object, ctx: object) -> str:
    return "mcp ran"


MCP_TOOL = RegisteredTool(ToolDefinition("srv__do", "an MCP tool", {"type": "object"}), _echo)


class Asker:
    """A client of the pending store answering y, n or always, as the terminal prompt does."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.asked: list[PendingCall] = []

    async def __call__(self, entry: PendingCall, store: PendingStore) -> None:
        self.asked.append(entry)
        answer = self.answers.pop(0)
        store.decide(entry.id, "deny" if answer == "n" else "approve", "test", "declined" if answer == "n" else "",
                     "always" if answer == "always" else "once")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "a.txt").write_text("hello\n")
    return tmp_path


async def run(ws: Path, mode: str, asker: Asker, name: str, args: dict[str, object],
              warn: Callable[[str], None] | None = None, store: ApprovalStore | None = None) -> tuple[bool, str]:
    """One call through a pipeline whose asks wait in a pending store, answered by ``asker``."""
    env = LocalExecutionEnvironment(ws)
    registry = ToolRegistry.of([shell_tool(), read_file_tool(), write_file_tool(), MCP_TOOL])
    remembered = store or ApprovalStore(ws)
    pipeline = build_pipeline(registry, env, policy=approval_policy(mode, remembered),
                              pending=SqlitePendingStore(ws.parent / f"{ws.name}-pending.db"), wait_for_answer=True,
                              ask_client=asker, remember=remembering(remembered, warn))
    result = await pipeline.run(PipelineCall(name, args))
    return result.is_error, result.output


async def test_on_risk_runs_read_only_lines_without_asking(ws: Path) -> None:
    asker = Asker()
    failed, out = await run(ws, "on-risk", asker, "shell", {"command": "cat a.txt | grep hel && git status >/dev/null; ls"})
    assert not failed and "hello" in out and asker.asked == []


async def test_on_risk_asks_before_a_writing_command_and_n_denies(ws: Path) -> None:
    asker = Asker("n")
    failed, out = await run(ws, "on-risk", asker, "shell", {"command": "ls && rm a.txt"})
    assert failed and "denied by test: declined" in out
    assert (ws / "a.txt").exists()
    assert asker.asked[0].remember_as == ("rm",) and "rm" in asker.asked[0].reason


async def test_redirection_that_writes_makes_a_read_only_command_risky(ws: Path) -> None:
    asker = Asker("y")
    failed, _ = await run(ws, "on-risk", asker, "shell", {"command": "echo hi > b.txt"})
    assert not failed and len(asker.asked) == 1 and (ws / "b.txt").read_text() == "hi\n"


async def test_always_is_remembered_per_project_by_prefix(ws: Path) -> None:
    asker = Asker("always")
    failed, _ = await run(ws, "on-risk", asker, "shell", {"command": "touch one.txt"})
    assert not failed and asker.asked[0].remember_as == ("touch",)
    assert 'allowed_prefixes = [\n  "touch",\n]' in (ws / ".codeloop" / "approvals.toml").read_text()
    again = Asker()
    failed, _ = await run(ws, "on-risk", again, "shell", {"command": "touch two.txt && cat a.txt"})
    assert not failed and again.asked == [] and (ws / "two.txt").exists()
    assert ApprovalStore(ws).is_allowed("touch x") and not ApprovalStore(ws).is_allowed("touchy x")


async def test_git_subcommand_prefix_does_not_allow_other_subcommands(ws: Path) -> None:
    store = ApprovalStore(ws)
    store.remember("git commit")
    assert store.is_allowed("git commit -m 'x'")
    assert not store.is_allowed("git push") and not store.is_allowed("git commit -m x; rm -rf /")
    assert not store.is_allowed("$(echo git) commit")


async def test_never_ask_runs_everything_and_always_ask_asks_for_reads_too(ws: Path) -> None:
    asker = Asker()
    failed, _ = await run(ws, "never-ask", asker, "shell", {"command": "touch z.txt"})
    assert not failed and asker.asked == []
    asker = Asker("y")
    failed, _ = await run(ws, "always-ask", asker, "shell", {"command": "ls"})
    assert not failed and len(asker.asked) == 1
    failed, _ = await run(ws, "always-ask", Asker(), "read_file", {"file_path": "a.txt"})
    assert not failed


async def test_always_ask_runs_index_searches_without_asking_but_not_writes(ws: Path) -> None:
    policy = approval_policy("always-ask", ApprovalStore(ws))
    env = LocalExecutionEnvironment(ws)
    registry = ToolRegistry.of([*all_tools(), *index_tools(ws)])
    for name in ("search_code", "find_symbol", "impact", "grep"):
        decision = await policy(registry.request(name, {"query": "x"}, "c1"), env)
        assert decision.action == "allow", name
    decision = await policy(registry.request("write_file", {"file_path": "b.txt", "content": "b"}, "c2"), env)
    assert decision.action == "ask" and decision.remember_as == ("write_file",)


async def test_on_risk_asks_for_mcp_tools_but_not_file_tools(ws: Path) -> None:
    asker = Asker("n")
    failed, _ = await run(ws, "on-risk", asker, "srv__do", {})
    assert failed and asker.asked[0].remember_as == ("srv__do",) and asker.asked[0].grants == ("once", "always")
    failed, _ = await run(ws, "on-risk", Asker(), "write_file", {"file_path": "c.txt", "content": "c"})
    assert not failed


async def test_on_risk_reads_the_declarations_not_the_names(ws: Path) -> None:
    """What asks is what the tool declares, whatever its name (issue 30)."""
    from codeloop.tools.jobs import JobTable, add_job_tools

    registry = ToolRegistry.of(all_tools())
    add_job_tools(registry, JobTable())
    policy = approval_policy("on-risk", ApprovalStore(ws))
    env = LocalExecutionEnvironment(ws)
    feeds = await policy(registry.request("job_input", {"job_id": "job1", "text": "rm -rf .\n"}), env)
    assert feeds.action == "ask" and feeds.remember_as == ("job_input",)  # may do anything: asked
    for name, args in (("job_stop", {"job_id": "job1"}), ("job_output", {}),
                       ("apply_patch", {"patch": "*** Begin Patch\n*** Add File: n.txt\n+n\n*** End Patch"})):
        assert (await policy(registry.request(name, args), env)).action == "allow", name
    renamed = make_tool("notes_save", "d", {"path": {"type": "string"}}, ["path"], _noop, writes("path"))
    assert (await policy(renamed.effects.request("notes_save", {"path": "n.md"}), env)).action == "allow"
    undeclared = make_tool("notes_sync", "d", {}, [], _noop)  # says nothing: the widest, asked
    assert (await policy(undeclared.effects.request("notes_sync", {}), env)).action == "ask"


async def _noop(args: object, env: object, ctx: object) -> str:
    return ""


async def test_the_policy_decides_and_never_prompts(ws: Path) -> None:
    """An ask is a decision naming what "always" would remember; nobody is asked here."""
    env = LocalExecutionEnvironment(ws)
    policy = approval_policy("on-risk", ApprovalStore(ws))
    result = await execute_tool_call(ToolRegistry.of([shell_tool()]), "shell", {"command": "rm a.txt"}, env,
                                     policy=policy)
    assert result.is_error and result.pending is not None and (ws / "a.txt").exists()
    assert result.pending.decision == Decision.ask("runs rm (may change files)", "approval.on-risk", ("rm",))


def test_malformed_approvals_file_is_a_clear_error(ws: Path) -> None:
    (ws / ".codeloop").mkdir()
    (ws / ".codeloop" / "approvals.toml").write_text("allowed_prefixes = 3\n")
    with pytest.raises(ApprovalsFileError, match="expected only allowed_prefixes"):
        ApprovalStore(ws)


def test_unknown_mode_is_refused(ws: Path) -> None:
    with pytest.raises(ValueError, match="never-ask, on-risk, always-ask"):
        approval_policy("sometimes", ApprovalStore(ws))


@settings(max_examples=100, deadline=None)
@given(st.text(min_size=1, max_size=40))
def test_remembered_prefixes_round_trip_through_the_file(tmp_path_factory: pytest.TempPathFactory, prefix: str) -> None:
    ws = tmp_path_factory.mktemp("ws")
    ApprovalStore(ws).remember(prefix)
    assert ApprovalStore(ws).prefixes == ([" ".join(prefix.split())] if prefix.split() else [])


@settings(max_examples=200, deadline=None)
@given(line=st.text(max_size=60), prefix=st.text(min_size=1, max_size=15))
def test_judging_any_line_never_raises(tmp_path_factory: pytest.TempPathFactory, line: str, prefix: str) -> None:
    ws = tmp_path_factory.mktemp("ws")
    store = ApprovalStore(ws)
    store.remember(prefix)
    policy = approval_policy("on-risk", store)
    call = all_tools_registry().request("shell", {"command": line})
    decision = asyncio.run(policy(call, LocalExecutionEnvironment(ws)))
    assert decision.action in ("allow", "ask")


async def test_always_never_writes_through_a_codeloop_dir_linked_out_of_the_workspace(
        ws: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    outside = tmp_path_factory.mktemp("outside")
    store = ApprovalStore(ws)
    # After the store was opened, the agent replaces .codeloop with a link leaving the workspace.
    (ws / ".codeloop").symlink_to(outside, target_is_directory=True)
    warnings: list[str] = []
    failed, _ = await run(ws, "on-risk", Asker("always"), "shell", {"command": "touch one.txt"},
                          warn=warnings.append, store=store)
    assert not failed and (ws / "one.txt").exists()  # the user said always: it runs
    assert list(outside.iterdir()) == []  # nothing written outside
    assert len(warnings) == 1 and "holds for this session only" in warnings[0]
    assert store.is_allowed("touch two.txt")  # remembered for the session


HOST_RUN_WRITES = [
    ("write_file", {"file_path": ".git/hooks/pre-commit", "content": "#!/bin/sh\n"}),
    ("write_file", {"file_path": "sub/.git/config", "content": "x"}),
    ("write_file", {"file_path": ".vscode/tasks.json", "content": "{}"}),
    ("write_file", {"file_path": ".envrc", "content": "x"}),
    ("shell", {"command": "git config core.fsmonitor 'touch /tmp/x'"}),
    ("shell", {"command": "git -C sub config --add alias.st '!sh'"}),
    ("shell", {"command": "git config --unset user.name"}),
    ("shell", {"command": "echo x > .idea/workspace.xml"}),
    ("shell", {"command": "cp hook .git/hooks/post-checkout"}),
]
HOST_RUN_READS = [
    ("read_file", {"file_path": ".git/config"}),
    ("shell", {"command": "cat .git/config .envrc"}),
    ("shell", {"command": "git config --get user.name"}),
    ("shell", {"command": "git config user.name"}),
    ("shell", {"command": "git config --list"}),
    ("write_file", {"file_path": "src/github.py", "content": "x"}),
    ("write_file", {"file_path": "docs/.gitignore", "content": "x"}),
]


@pytest.mark.parametrize(("name", "args"), HOST_RUN_WRITES)
@pytest.mark.parametrize("mode", ["never-ask", "on-risk", "always-ask"])
async def test_without_a_sandbox_writing_what_the_host_runs_asks_and_never_ask_refuses(
        ws: Path, mode: str, name: str, args: dict[str, object]) -> None:
    """Issue 32: no sandbox keeps git's configuration and hooks, .envrc, editor settings
    read-only, so the policy asks in every mode (never remembered) and refuses under never-ask."""
    (ws / "hook").write_text("#!/bin/sh\n")
    asker = Asker("always")
    is_error, output = await run(ws, mode, asker, name, args)
    if mode == "never-ask":
        assert is_error and asker.asked == [] and "refused" in output and "no sandbox protects them" in output
    else:  # asked; the user's "always" let this call run and remembered nothing
        assert len(asker.asked) == 1 and asker.asked[0].remember_as == ()
        assert "no sandbox protects them" in asker.asked[0].reason
    assert not (ws / ".codeloop" / "approvals.toml").exists()


@pytest.mark.parametrize(("name", "args"), HOST_RUN_READS)
async def test_reading_what_the_host_runs_and_similar_names_are_not_refused(
        ws: Path, name: str, args: dict[str, object]) -> None:
    asker = Asker()
    _, output = await run(ws, "never-ask", asker, name, args)
    assert asker.asked == [] and "no sandbox protects" not in output
