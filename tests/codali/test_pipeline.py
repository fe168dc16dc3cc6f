"""The roles pipeline with a scripted model (codeloop.llm ScriptedAdapter, no network)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from codeloop.codali.critic import judge, outside_plan, parse_verdict
from codeloop.codali.pipeline import ModelChoice, PipelineConfig, RolesPipeline, parse_plan_targets
from codeloop.environments.base import ExecutionEnvironment
from codeloop.llm.adapters.scripted import ScriptedAdapter, text_response, tool_call_response
from codeloop.llm.client import Client
from codeloop.llm.errors import error_from_status_code
from codeloop.llm.types import Request
from codeloop.policy.approval import Effect
from codeloop.tools.apply_patch import apply_patch_tool
from codeloop.tools.effects import ToolEffects, argument_paths
from codeloop.tools.index_tools import index_tools
from codeloop.tools.registry import ToolContext, ToolRegistry, make_tool
from codeloop.tools.sets import core_tools

LIBRARIAN_REQUEST = """I need the page first.

AGENT_REQUEST v1
role: librarian
request_id: lib-1
needs:
  - type: file.read
    path: src/public/index.html
"""

PLAN = """1. Change the heading text.

plan_targets:
  - "src/public/index.html"
"""


def misdeclared_tools(repo: Path) -> ToolRegistry:
    """The builder's tools plus ``run``: a command tool whose declaration says it writes no file
    (a wrong declaration). The plan guard believes declarations; the critic's before/after
    comparison of the repository catches what such a tool really changed."""

    async def run(args: dict[str, Any], env: ExecutionEnvironment, ctx: ToolContext) -> str:
        return (await env.exec_command(args["command"])).stdout

    lying = make_tool("run", "Run a command.", {"command": {"type": "string"}}, ["command"], run,
                      ToolEffects(frozenset({Effect.WRITE}), argument_paths()))
    return ToolRegistry.of([*core_tools(), *index_tools(repo), lying])


def config(**limits: object) -> PipelineConfig:
    return PipelineConfig.single("scripted-main", summarizer="scripted-cheap", **limits)  # type: ignore[arg-type]


def texts(request: Request) -> str:
    return "\n".join(m.text for m in request.messages)


async def test_pass_on_first_round(repo: Path) -> None:
    new_html = (repo / "src/public/index.html").read_text().replace("Landing page", "Welcome")
    adapter = ScriptedAdapter([
        text_response(LIBRARIAN_REQUEST),
        text_response("Brief: src/public/index.html holds the landing page heading."),
        text_response(PLAN),
        tool_call_response(("write_file", {"file_path": "src/public/index.html", "content": new_html})),
        text_response("Changed the heading."),
        text_response("status: PASS"),
    ])
    result = await RolesPipeline(Client({"scripted": adapter}), repo, config()).run("Rename the heading to Welcome")
    assert result.status == "PASS" and result.rounds == 1
    assert result.plan_targets == ("src/public/index.html",)
    assert result.touched_files == ("src/public/index.html",)
    assert "<h1>Welcome</h1>" in (repo / "src/public/index.html").read_text()
    # The librarian's request was answered with the file content in the next call's history.
    second = texts(adapter.requests[1])
    assert "CODALI_RESPONSE v1" in second and "<h1>Landing page</h1>" in second
    # Every call carries the full history: the critic saw the task and the plan.
    assert "Task: Rename the heading to Welcome" in texts(adapter.requests[-1])
    assert "plan_targets" in texts(adapter.requests[-1])
    # The builder was offered the tools, including the index tools.
    names = {t.name for t in adapter.requests[3].tools or []}
    assert {"write_file", "read_file", "search_code", "find_symbol", "impact"} <= names


async def test_critic_fails_touch_outside_plan_and_architect_revises(repo: Path) -> None:
    adapter = ScriptedAdapter([
        text_response("Brief: nothing to fetch."),
        text_response(PLAN),
        # The plan guard refuses write_file outside the plan, and does not run a shell line that may
        # write (it asks, and nobody is there to answer); a tool whose declaration is wrong gets past.
        tool_call_response(("shell", {"command": "printf '<p>x</p>\\n' > src/other.html"})),
        tool_call_response(("run", {"command": "printf '<p>x</p>\\n' > src/other.html"})),
        text_response("Done."),
        text_response("status: PASS"),  # the model is lenient; the deterministic check is not
        text_response("Revised: also allow the new file.\n\nplan_targets:\n  - src/public/index.html\n"
                      "  - src/other.html\n"),
        text_response("Nothing more to change."),
        text_response("Really nothing: the file is already written."),  # after the nudge
        text_response("status: PASS"),
    ])
    pipeline = RolesPipeline(Client({"scripted": adapter}), repo, config(), registry=misdeclared_tools(repo))
    result = await pipeline.run("Add a page")
    assert result.status == "PASS" and result.rounds == 2
    shell_result = str(adapter.requests[3].messages[-1])
    assert "needs approval (shell may change files outside plan_targets (src/public/index.html)" in shell_result
    revise_request = texts(adapter.requests[6])
    assert "critic.result" in revise_request and '"FAIL"' in revise_request
    assert "touched files outside allowed paths: src/other.html" in revise_request


async def test_check_command_failure_fails_until_max_rounds(repo: Path) -> None:
    script = [text_response("Brief.")]
    for _ in range(2):
        script += [text_response(PLAN), text_response("No change needed."), text_response("Still none."),
                   text_response("status: PASS")]
    adapter = ScriptedAdapter(script)
    cfg = config(max_rounds=2, check_command="echo 'boom: 1 failed' && exit 3")
    result = await RolesPipeline(Client({"scripted": adapter}), repo, cfg).run("Make tests pass")
    assert result.status == "FAIL" and result.rounds == 2
    assert result.critic is not None
    assert result.critic.reasons[0].startswith("check command failed (exit 3)")
    assert "boom: 1 failed" in result.critic.reasons[0]
    assert adapter.script == []


async def test_malformed_agent_request_is_returned_to_the_model(repo: Path) -> None:
    adapter = ScriptedAdapter([
        text_response("AGENT_REQUEST v1\nrole: librarian\nneeds:\n  - type: file.read\n"),
        text_response("Brief without context."),
        text_response(PLAN), text_response("Nothing to do."), text_response("Nothing."), text_response("status: PASS"),
    ])
    await RolesPipeline(Client({"scripted": adapter}), repo, config()).run("task")
    assert "Codali could not parse your AGENT_REQUEST: AGENT_REQUEST line 4, field needs[0].path" in texts(
        adapter.requests[1])


async def test_a_wrong_role_and_one_bad_need_are_warnings_and_the_rest_is_answered(repo: Path) -> None:
    # From a 1.5B librarian: "role: developer" and a docdex.snippet without doc_id beside a
    # good need. Strictly that is an error and the model gave up ("I cannot fulfill this").
    adapter = ScriptedAdapter([
        text_response("AGENT_REQUEST v1\nrole: developer\nrequest_id: r1\nneeds:\n  - type: docdex.snippet\n"
                      "    path: src/public/index.html\n  - type: file.read\n    path: src/public/index.html\n"),
        text_response("Brief."),
        text_response(PLAN), text_response("Nothing to do."), text_response("Nothing."), text_response("status: PASS"),
    ])
    await RolesPipeline(Client({"scripted": adapter}), repo, config()).run("task")
    answer = texts(adapter.requests[1])
    assert "<h1>Landing page</h1>" in answer
    assert "role_replaced: developer -> librarian" in answer
    assert "need_skipped: line 5, field needs[0].doc_id: required for docdex.snippet" in answer


async def test_every_role_starts_with_the_repository_tree(repo: Path) -> None:
    adapter = ScriptedAdapter([text_response("Brief."), text_response(PLAN), text_response("Nothing."),
                               text_response("Nothing."), text_response("status: PASS")])
    await RolesPipeline(Client({"scripted": adapter}), repo, config()).run("task")
    first = texts(adapter.requests[0])
    assert "Codali's overview of the repository" in first and 'type: "docdex.tree"' in first
    assert "index.html" in first and "hash.ts" in first


async def test_history_is_summarized_by_the_cheaper_model_at_90_percent(repo: Path) -> None:
    big = "x" * 3000
    adapter = ScriptedAdapter([
        text_response("Brief: " + big),
        text_response("SUMMARY-OF-EARLIER-TURNS"),  # the summarizer's answer
        text_response(PLAN), text_response("Nothing to do."), text_response("Nothing."), text_response("status: PASS"),
    ])
    cfg = PipelineConfig(*(ModelChoice("role-model", context_window=1000),) * 4,
                         summarizer=ModelChoice("cheap-model"), keep_recent_messages=1, max_output_tokens=100)
    result = await RolesPipeline(Client({"scripted": adapter}), repo, cfg).run("task")
    assert result.compactions >= 1
    summarizer_call = adapter.requests[1]
    assert summarizer_call.model == "cheap-model" and "Brief: xxx" in texts(summarizer_call)
    after = adapter.requests[2]
    assert after.model == "role-model"
    assert "Summary of the conversation so far:\nSUMMARY-OF-EARLIER-TURNS" in texts(after)
    assert big not in texts(after)


async def test_a_prompt_the_server_finds_too_long_is_compacted_and_asked_once_more(repo: Path) -> None:
    # The estimate said it fits; llama.cpp disagrees (HTTP 500 "Context size has been exceeded.").
    too_long = error_from_status_code(500, "Context size has been exceeded.", provider="scripted")
    adapter = ScriptedAdapter([
        text_response("Brief."), too_long, text_response("SHORTER"),  # the summarizer's answer
        text_response(PLAN), text_response("Nothing to do."), text_response("Nothing."), text_response("status: PASS"),
    ])
    cfg = PipelineConfig.single("m", keep_recent_messages=1)
    result = await RolesPipeline(Client({"scripted": adapter}), repo, cfg).run("task")
    assert result.status == "PASS" and result.compactions == 1
    assert "Summary of the conversation so far:\nSHORTER" in texts(adapter.requests[3])


async def test_each_role_uses_its_own_model(repo: Path) -> None:
    adapter = ScriptedAdapter([text_response("Brief."), text_response(PLAN), text_response("Nothing."),
                               text_response("Nothing."), text_response("status: PASS")])
    cfg = PipelineConfig(ModelChoice("lib"), ModelChoice("arch"), ModelChoice("build"), ModelChoice("crit"),
                         ModelChoice("sum"))
    await RolesPipeline(Client({"scripted": adapter}), repo, cfg).run("task")
    assert [r.model for r in adapter.requests] == ["lib", "arch", "build", "build", "crit"]


def test_plan_targets_forms() -> None:
    assert parse_plan_targets(PLAN) == ["src/public/index.html"]
    assert parse_plan_targets('{"plan_targets": ["a.py", "./b/c.py"]}') == ["a.py", "b/c.py"]
    assert parse_plan_targets("plan_targets: [a.py, docs/]") == ["a.py", "docs/"]
    assert parse_plan_targets("no targets here") is None


def test_critic_judgement() -> None:
    assert outside_plan(["a.py", "docs/x.md", ".gitignore"], ["./a.py", "docs/"]) == [".gitignore"]
    assert parse_verdict("status: FAIL\nreasons:\n  - \"bug in a.py\"\nsuggested_fixes:\n  - fix it\n") == (
        "FAIL", ["bug in a.py"], ["fix it"])
    assert judge("**PASS**", ["a.py"], ["a.py"], None).status == "PASS"
    silent = judge("looks fine", ["a.py"], ["a.py"], None)
    assert silent.status == "FAIL" and silent.reasons == (
        "critic model gave no 'status: PASS|FAIL' line (it wrote: 'looks fine')",)


async def test_builder_runs_tool_calls_a_small_model_writes_as_text(repo: Path) -> None:
    # Qwen2.5-Coder-1.5B writes its calls as fenced JSON, not structured tool_calls; the
    # local e2e run showed a builder that ignored them and changed nothing in two rounds.
    new_html = (repo / "src/public/index.html").read_text().replace("Landing page", "Welcome")
    fenced = "```json\n" + json.dumps({"name": "write_file", "arguments": {
        "file_path": "src/public/index.html", "content": new_html}}) + "\n```"
    adapter = ScriptedAdapter([
        text_response("Brief: the heading is in src/public/index.html."),
        text_response(PLAN),
        text_response('{"name": "delete_file", "arguments": {"file_path": "x.txt"}}'),
        text_response(fenced),
        text_response("Changed the heading."),
        text_response("status: PASS"),
    ])
    result = await RolesPipeline(Client({"scripted": adapter}), repo, config()).run("Rename the heading to Welcome")
    assert result.status == "PASS" and result.touched_files == ("src/public/index.html",)
    assert "<h1>Welcome</h1>" in (repo / "src/public/index.html").read_text()
    # The invented tool got an error with the real equivalent; the server saw structured
    # calls answered by tool results.
    builder_second = adapter.requests[3].messages
    assert any(p.tool_call is not None and p.tool_call.name == "delete_file"
               for m in builder_second for p in m.content)
    errors = [str(p.tool_result.content) for m in builder_second for p in m.content if p.tool_result is not None]
    assert errors and errors[-1].startswith("Unknown tool: delete_file") and "rm -- x.txt" in errors[-1]


def test_plan_targets_as_the_local_model_writes_them() -> None:
    # Shapes from Qwen2.5-Coder-1.5B plans in the local e2e runs.
    assert parse_plan_targets('Files to touch:\n- `greet.py`\n\nPlan targets:\n- "path/to/greet.py"\n') == [
        "path/to/greet.py"]
    assert parse_plan_targets("**Plan targets:**\n\n1. greet.py - the greeting\n2. `tests/t.py` (new)\nDone.") == [
        "greet.py", "tests/t.py"]
    assert parse_plan_targets("```yaml\nplan_targets:\n  - a.py\n```") == ["a.py"]
    assert parse_plan_targets("plan_targets: greet.py") == ["greet.py"]
    assert parse_plan_targets("plan_targets:\n\nThat is all.") is None


def test_a_verdict_with_one_sentence_of_reasons_is_one_reason() -> None:
    # The 1.5B critic wrote a sentence after "reasons:"; it became one reason per character.
    text = ("status: FAIL\nreasons: The build failed: greet('a') returns 'Hello, a'.\nsuggested_fixes: \n"
            "- Edit greet.py.\n- Run the check again.\n")
    assert parse_verdict(text) == ("FAIL", ["The build failed: greet('a') returns 'Hello, a'."],
                                   ["Edit greet.py.", "Run the check again."])
    result = judge(text, [], ["greet.py"], None)
    assert result.reasons == ("The build failed: greet('a') returns 'Hello, a'.",)


async def test_a_builder_that_only_says_done_is_reminded_once_and_then_builds(repo: Path) -> None:
    new_html = (repo / "src/public/index.html").read_text().replace("Landing page", "Welcome")
    events: list[str] = []
    adapter = ScriptedAdapter([
        text_response("Brief."), text_response(PLAN),
        text_response("Done."),  # no tool call, nothing changed: a small model's usual first reply
        tool_call_response(("write_file", {"file_path": "src/public/index.html", "content": new_html})),
        text_response("Changed the heading."),
        text_response("status: PASS"),
    ])
    result = await RolesPipeline(Client({"scripted": adapter}), repo, config(),
                                 on_event=lambda kind, data: events.append(kind)).run("Rename the heading")
    assert result.status == "PASS" and result.touched_files == ("src/public/index.html",)
    assert "No tool ran and nothing in the repository changed" in texts(adapter.requests[3])
    assert events.count("builder_nudge") == 1


async def test_plan_targets_that_miss_a_file_the_repository_has_are_sent_back(repo: Path) -> None:
    events: list[tuple[str, dict[str, object]]] = []
    adapter = ScriptedAdapter([
        text_response("Brief."),
        text_response("Edit the heading.\n\nPlan targets:\n- path/to/index.html\n- src/new_page.html\n"),
        text_response("plan_targets:\n  - src/public/index.html\n  - src/new_page.html\n"),
        text_response("Nothing."), text_response("Nothing."), text_response("status: PASS"),
    ])
    result = await RolesPipeline(Client({"scripted": adapter}), repo, config(),
                                 on_event=lambda kind, data: events.append((kind, data))).run("Rename the heading")
    correction = texts(adapter.requests[2])
    assert "These plan_targets do not exist in the repository: path/to/index.html" in correction
    assert "the repository has src/public/index.html" in correction
    assert "src/new_page.html" not in correction.split("These plan_targets")[1]  # a new file is fine
    assert result.plan_targets == ("src/public/index.html", "src/new_page.html")
    assert [kind for kind, _ in events].count("plan_corrected") == 1


async def test_the_overview_of_a_big_repository_is_cut_and_says_so(tmp_path: Path) -> None:
    big = tmp_path / "big"
    big.mkdir()
    for i in range(400):
        (big / f"module_with_a_long_name_{i:03}.py").write_text("x = 1\n")
    adapter = ScriptedAdapter([text_response("Brief."), text_response(PLAN), text_response("Nothing."),
                               text_response("Nothing."), text_response("status: PASS")])
    await RolesPipeline(Client({"scripted": adapter}), big, config()).run("task")
    first = texts(adapter.requests[0])
    assert "module_with_a_long_name_000.py" in first and "module_with_a_long_name_399.py" not in first
    assert "tree_truncated:" in first and "of 400 lines; ask docdex.tree with a path" in first


async def test_a_constrained_builder_gets_a_schema_and_its_json_calls_run(repo: Path) -> None:
    new_html = (repo / "src/public/index.html").read_text().replace("Landing page", "Welcome")
    adapter = ScriptedAdapter([
        text_response("Brief."), text_response(PLAN),
        text_response(json.dumps({"tool": "write_file", "arguments": {"file_path": "src/public/index.html",
                                                                      "content": new_html}})),
        text_response(json.dumps({"tool": "write_file", "arguments": {"path": "x"}})),  # wrong argument name
        text_response(json.dumps({"final_answer": "Changed the heading."})),
        text_response("status: PASS"),
    ])
    events: list[tuple[str, dict[str, object]]] = []
    result = await RolesPipeline(Client({"scripted": adapter}), repo, config(builder_tools="constrained"),
                                 on_event=lambda kind, data: events.append((kind, data))).run("Rename the heading")
    assert result.status == "PASS" and "<h1>Welcome</h1>" in (repo / "src/public/index.html").read_text()
    builder = adapter.requests[2]
    assert builder.tools is None and builder.response_format is not None
    branches = builder.response_format.json_schema["anyOf"]  # type: ignore[index]
    assert {"const": "write_file"} in [b["properties"].get("tool") for b in branches]
    assert "# Reply format" in texts(builder)
    assert [d["is_error"] for k, d in events if k == "tool_call"] == [False, True]
    assert "arguments for write_file" in str(adapter.requests[4].messages[-1].content)


def test_a_verdict_written_as_json_counts() -> None:
    # The 1.5B critic copied the builder's JSON calls: {"name": "status", "value": "PASS", ...}.
    assert parse_verdict('{"name": "status", "value": "PASS", "reasons": [], "suggested_fixes": []}') == (
        "PASS", [], [])
    assert parse_verdict('Verdict: {"status": "fail", "reasons": "greet is unchanged"}') == (
        "FAIL", ["greet is unchanged"], [])
    assert judge('{"status": "PASS"}', ["a.py"], ["a.py"], None).status == "PASS"
    assert parse_verdict('{"name": "status", "value": "maybe"}')[0] is None
    # Seen in a local run after a correct build: the critic's whole reply.
    assert parse_verdict('{"name": "pass"}') == ("PASS", [], [])
    assert parse_verdict('{"verdict": "FAIL", "reasons": ["no test"]}') == ("FAIL", ["no test"], [])
    assert parse_verdict('{"name": "greet"}')[0] is None  # a name that is no verdict


def test_json_nested_too_deep_to_decode_is_no_json_verdict() -> None:
    nested = '{"a": ' * 100_000 + "1" + "}" * 100_000
    assert parse_verdict("status: PASS\n" + nested) == ("PASS", [], [])
    assert parse_verdict(nested)[0] is None


def test_the_prompts_placeholder_is_not_a_target() -> None:
    plan = 'plan_targets:\n  - "<path of a file to change, as in the repository overview>"\n  - greet.py\n'
    assert parse_plan_targets(plan) == ["greet.py"]


async def test_a_critic_reply_without_a_verdict_is_asked_once_more(repo: Path) -> None:
    events: list[str] = []
    adapter = ScriptedAdapter([
        text_response("Brief."), text_response(PLAN), text_response("Nothing."), text_response("Nothing."),
        text_response("The build looks good to me."),  # no verdict
        text_response("status: PASS"),
    ])
    result = await RolesPipeline(Client({"scripted": adapter}), repo, config(),
                                 on_event=lambda kind, data: events.append(kind)).run("task")
    assert result.status == "PASS" and events.count("verdict_missing") == 1
    assert "Your reply has no verdict" in texts(adapter.requests[5])


async def test_absolute_plan_targets_inside_the_repository_become_relative(repo: Path) -> None:
    root = str(repo.resolve())
    adapter = ScriptedAdapter([
        text_response("Brief."), text_response(f"Edit.\n\nplan_targets:\n  - {root}/src/public/index.html\n"),
        text_response("Nothing."), text_response("Nothing."), text_response("status: PASS"),
    ])
    result = await RolesPipeline(Client({"scripted": adapter}), repo, config()).run("task")
    assert result.plan_targets == ("src/public/index.html",)


async def test_the_builder_cannot_write_outside_the_plan_and_still_makes_the_planned_change(repo: Path) -> None:
    new_html = (repo / "src/public/index.html").read_text().replace("Landing page", "Welcome")
    guide = (repo / "docs/guide.md").read_bytes()
    adapter = ScriptedAdapter([
        text_response("Brief."), text_response(PLAN),
        tool_call_response(("write_file", {"file_path": "docs/guide.md", "content": "# changed\n"})),
        tool_call_response(("edit_file", {"file_path": str(repo / "src/app.py"), "old_string": "os",
                                          "new_string": "sys"})),
        tool_call_response(("write_file", {"file_path": "./src/public/index.html", "content": new_html})),
        text_response("Changed the heading."),
        text_response("status: PASS"),
    ])
    result = await RolesPipeline(Client({"scripted": adapter}), repo, config()).run("Rename the heading")
    assert result.status == "PASS" and result.touched_files == ("src/public/index.html",)
    assert (repo / "docs/guide.md").read_bytes() == guide and "import os" in (repo / "src/app.py").read_text()
    refusal = str(adapter.requests[3].messages[-1].content)
    assert "write_file refused: docs/guide.md is not in plan_targets (src/public/index.html)" in refusal
    assert "edit_file refused: src/app.py is not in plan_targets" in str(adapter.requests[4].messages[-1].content)


async def test_a_constrained_builder_may_only_name_plan_targets_in_write_calls(repo: Path) -> None:
    adapter = ScriptedAdapter([
        text_response("Brief."), text_response(PLAN),
        text_response(json.dumps({"final_answer": "Nothing to do."})),
        text_response(json.dumps({"final_answer": "Really nothing."})),
        text_response("status: PASS"),
    ])
    await RolesPipeline(Client({"scripted": adapter}), repo, config(builder_tools="constrained")).run("task")
    schema = adapter.requests[2].response_format.json_schema  # type: ignore[union-attr]
    paths = {b["properties"]["tool"]["const"]: b["properties"]["arguments"]["properties"].get("file_path", {})
             for b in schema["anyOf"] if "tool" in b["properties"]}  # type: ignore[index]
    assert paths["write_file"]["enum"] == paths["edit_file"]["enum"] == ["src/public/index.html"]
    assert "enum" not in paths["read_file"]  # reading anything stays allowed


async def test_the_critic_sees_the_builders_changes_as_a_diff(repo: Path) -> None:
    html = (repo / "src/public/index.html").read_text()
    heading = next(line for line in html.splitlines() if "Landing page" in line)
    adapter = ScriptedAdapter([
        text_response("Brief."),
        text_response('Plan.\n\nplan_targets:\n  - "src/public/index.html"\n  - "src/new.txt"\n'),
        tool_call_response(("edit_file", {"file_path": "src/public/index.html", "old_string": "Landing page",
                                          "new_string": "Welcome"})),
        tool_call_response(("write_file", {"file_path": "src/new.txt", "content": "brand new line\n"})),
        tool_call_response(("run", {"command": "rm src/app.py"})),
        text_response("Done."),
        text_response("status: PASS"),
    ])
    result = await RolesPipeline(Client({"scripted": adapter}), repo, config(max_rounds=1),
                                 registry=misdeclared_tools(repo)).run("Rename it")
    assert result.status == "FAIL"  # src/app.py was deleted outside the plan
    critic_prompt = adapter.requests[6].messages[-1].text
    assert "--- a/src/public/index.html" in critic_prompt
    assert f"-{heading}\n+{heading.replace('Landing page', 'Welcome')}" in critic_prompt
    assert "new file: src/new.txt\nbrand new line" in critic_prompt
    assert "deleted: src/app.py" in critic_prompt


def test_a_long_change_description_is_cut_and_says_so(tmp_path: Path) -> None:
    from codeloop.codali.pipeline import describe_changes

    (tmp_path / "a.txt").write_text("".join(f"new line {i}\n" for i in range(2000)))
    (tmp_path / "b.txt").write_text("changed\n")
    whole = describe_changes(tmp_path, ["a.txt", "b.txt"], {"a.txt": "old\n"}, {"a.txt", "b.txt"}, limit=10**9)
    assert whole.startswith("--- a/a.txt") and whole.endswith("changed (no earlier copy kept): b.txt")
    cut = describe_changes(tmp_path, ["a.txt", "b.txt"], {"a.txt": "old\n"}, {"a.txt", "b.txt"}, limit=500)
    assert len(cut) < 600 and whole.startswith(cut.rsplit("\n", 1)[0])
    assert cut.endswith(f"[changes cut at 500 of {len(whole)} characters]")


def test_a_json_verdict_keeps_its_reasons_when_it_starts_a_line() -> None:
    verdict = '{\n  "status": "FAIL",\n  "reasons": ["greet still says Hello"],\n  "suggested_fixes": ["edit it"]\n}'
    assert parse_verdict(verdict) == ("FAIL", ["greet still says Hello"], ["edit it"])
    assert parse_verdict("status: FAIL\nreasons:\n  - plain list\n") == ("FAIL", ["plain list"], [])


async def test_a_constrained_critic_is_asked_again_under_a_verdict_schema(repo: Path) -> None:
    events: list[str] = []
    adapter = ScriptedAdapter([
        text_response("Brief."), text_response(PLAN),
        text_response(json.dumps({"final_answer": "Nothing."})), text_response(json.dumps({"final_answer": "No."})),
        text_response("The build looks fine to me."),
        text_response(json.dumps({"status": "FAIL", "reasons": ["the heading is unchanged"],
                                  "suggested_fixes": ["edit src/public/index.html"]})),
    ])
    cfg = config(builder_tools="constrained", max_rounds=1)
    result = await RolesPipeline(Client({"scripted": adapter}), repo, cfg,
                                 on_event=lambda kind, data: events.append(kind)).run("Rename the heading")
    assert events.count("verdict_missing") == 1
    again = adapter.requests[5]
    assert again.response_format is not None and again.response_format.json_schema is not None
    assert again.response_format.json_schema["properties"]["status"] == {"enum": ["PASS", "FAIL"]}
    assert result.status == "FAIL" and result.critic is not None
    assert result.critic.reasons == ("the heading is unchanged",)
    assert "edit src/public/index.html" in result.critic.suggested_fixes


def test_need_types_copied_from_the_prompt_are_not_targets() -> None:
    # A 1.5B architect listed the prompt's need types after the real file.
    plan = 'plan_targets:\n  - "greet.py"\n  - "docdex.search"\n  - "file.read"\n  - "codali.run"\n'
    assert parse_plan_targets(plan) == ["greet.py"]


async def test_a_misplaced_target_the_task_names_is_mapped_after_one_correction(repo: Path) -> None:
    events: list[tuple[str, dict[str, object]]] = []
    wrong = 'Plan.\n\nplan_targets:\n  - "lib/hash.ts"\n  - "src/auth/new_helper.ts"\n'
    adapter = ScriptedAdapter([
        text_response("Brief."), text_response(wrong), text_response(wrong),  # told once, still wrong
        tool_call_response(("edit_file", {"file_path": "src/auth/hash.ts", "old_string": "s.length",
                                          "new_string": "s.length * 31"})),
        text_response("Done."), text_response("status: PASS"),
    ])
    result = await RolesPipeline(Client({"scripted": adapter}), repo, config(), on_event=lambda k, d: events.append(
        (k, d))).run("In src/auth/hash.ts, multiply the length by 31.")
    # The task names src/auth/hash.ts: lib/hash.ts means it; the new helper stays a new file.
    assert result.plan_targets == ("src/auth/hash.ts", "src/auth/new_helper.ts")
    assert result.status == "PASS" and "* 31" in (repo / "src/auth/hash.ts").read_text()
    assert ("plan_corrected", {"mapped": {"lib/hash.ts": "src/auth/hash.ts"}}) in events
    assert "lib/hash.ts -> src/auth/hash.ts" in adapter.requests[3].messages[-2].text


async def test_a_new_file_beside_a_same_named_one_stays_when_the_task_does_not_name_it(repo: Path) -> None:
    plan = 'Plan.\n\nplan_targets:\n  - "lib/hash.ts"\n'
    adapter = ScriptedAdapter([text_response("Brief."), text_response(plan), text_response(plan),
                               text_response("Nothing."), text_response("Nothing."), text_response("status: PASS")])
    result = await RolesPipeline(Client({"scripted": adapter}), repo, config()).run("Add a second hash module")
    assert result.plan_targets == ("lib/hash.ts",)


async def test_the_plan_guard_judges_where_a_write_lands_through_symlinks(repo: Path) -> None:
    (repo / "src/public/alias.html").symlink_to("index.html")  # lands on a plan target
    (repo / "src/sneaky.html").symlink_to("../docs/guide.md")  # lands outside the plan
    guide = (repo / "docs/guide.md").read_bytes()
    adapter = ScriptedAdapter([
        text_response("Brief."), text_response('Plan.\n\nplan_targets:\n  - "src/public/index.html"\n'
                                               '  - "src/sneaky.html"\n'),
        tool_call_response(("write_file", {"file_path": "src/public/alias.html", "content": "<h1>Welcome</h1>\n"})),
        tool_call_response(("write_file", {"file_path": "src/sneaky.html", "content": "# gone\n"})),
        text_response("Done."), text_response("status: PASS"),
    ])
    await RolesPipeline(Client({"scripted": adapter}), repo, config(max_rounds=1)).run("Rename the heading")
    assert (repo / "src/public/index.html").read_text() == "<h1>Welcome</h1>\n"
    assert (repo / "docs/guide.md").read_bytes() == guide
    assert "write_file refused: docs/guide.md is not in plan_targets" in str(adapter.requests[4].messages[-1].content)


async def test_a_builder_call_cut_by_the_output_limit_is_not_run_and_the_model_is_told(repo: Path) -> None:
    # The builder reads replies like a Session: half a file written as text never lands.
    original = (repo / "src/public/index.html").read_text()
    cut = '<tool name="write_file">\n<file_path>src/public/index.html</file_path>\n<content>\n<h1>Wel'
    adapter = ScriptedAdapter([
        text_response("Brief."), text_response(PLAN),
        text_response(cut, finish="length"),
        text_response("Nothing more."), text_response("status: PASS"),
    ])
    events: list[tuple[str, dict[str, object]]] = []
    await RolesPipeline(Client({"scripted": adapter}), repo, config(builder_tools="text", max_rounds=1),
                        on_event=lambda kind, data: events.append((kind, data))).run("Rename the heading")
    assert (repo / "src/public/index.html").read_text() == original
    assert ("tool_call", {"name": "write_file", "is_error": True}) in events
    told = str(adapter.requests[3].messages[-1].content)
    assert "cut off at the output limit (2048 tokens)" in told and "Send the call again, shorter" in told


async def test_the_builder_is_an_agent_session_continuing_the_shared_history(repo: Path) -> None:
    from codeloop.agent.history import SteeringTurn
    from codeloop.agent.session import Session
    from codeloop.codali.prompts import BUILDER, BUILDER_NUDGE

    new_html = (repo / "src/public/index.html").read_text().replace("Landing page", "Welcome")
    adapter = ScriptedAdapter([
        text_response("Brief."), text_response(PLAN),
        text_response("Done."),  # the builder's turn guard nudges once
        tool_call_response(("write_file", {"file_path": "src/public/index.html", "content": new_html})),
        text_response("Changed the heading."),
        text_response("status: PASS"),
    ])
    pipeline = RolesPipeline(Client({"scripted": adapter}), repo, config())
    await pipeline.run("Rename the heading")
    session = pipeline.builder_session
    assert isinstance(session, Session) and session.history is pipeline.history
    assert session.end_reason == "completed" and session.last_text == "Changed the heading."
    assert SteeringTurn in [type(t) for t in session.history.turns]
    assert [t.content for t in session.history.turns if isinstance(t, SteeringTurn)] == [BUILDER_NUDGE]
    assert adapter.requests[2].messages[0].text == BUILDER


async def test_the_builders_model_calls_stop_at_max_builder_steps(repo: Path) -> None:
    from codeloop.codali.prompts import BUILDER

    reads = [tool_call_response(("read_file", {"file_path": "src/app.py"})) for _ in range(3)]
    adapter = ScriptedAdapter([text_response("Brief."), text_response(PLAN), *reads, text_response("status: FAIL")])
    pipeline = RolesPipeline(Client({"scripted": adapter}), repo, config(max_builder_steps=2, max_rounds=1))
    await pipeline.run("task")
    assert [r.messages[0].text for r in adapter.requests].count(BUILDER) == 2
    assert pipeline.builder_session is not None and pipeline.builder_session.end_reason == "round_limit"


async def test_a_write_outside_plan_targets_is_refused_by_the_builder_sessions_policy(repo: Path) -> None:
    from codeloop.policy.approval import ToolCallRequest

    adapter = ScriptedAdapter([text_response("Brief."), text_response(PLAN), text_response("Nothing."),
                               text_response("Nothing."), text_response("status: PASS")])
    pipeline = RolesPipeline(Client({"scripted": adapter}), repo, config())
    await pipeline.run("task")
    session = pipeline.builder_session
    assert session is not None and session.policy is not None
    tools = pipeline.registry
    outside = await session.policy(tools.request("write_file", {"file_path": "docs/guide.md", "content": ""}),
                                   pipeline.env)
    assert outside.action == "deny"
    assert "write_file refused: docs/guide.md is not in plan_targets (src/public/index.html)" in outside.reason
    inside = await session.policy(tools.request("edit_file", {"file_path": "./src/public/index.html"}), pipeline.env)
    assert inside.action == "allow"
    # apply_patch and shell used to get past the guard (it knew only write_file and edit_file).
    patch = ("*** Begin Patch\n*** Update File: src/public/index.html\n@@\n-a\n+b\n"
             "*** Add File: docs/guide.md\n+x\n*** End Patch\n")
    patched = await session.policy(apply_patch_tool().effects.request("apply_patch", {"patch": patch}), pipeline.env)
    assert patched.action == "deny" and "apply_patch refused: docs/guide.md is not in plan_targets" in patched.reason
    writes = await session.policy(tools.request("shell", {"command": "echo x > docs/guide.md"}), pipeline.env)
    assert writes.action == "ask" and "shell may change files outside plan_targets" in writes.reason
    reads = await session.policy(tools.request("shell", {"command": "cat docs/guide.md | grep x"}), pipeline.env)
    assert reads.action == "allow"
    unknown = await session.policy(ToolCallRequest("srv__write", {"path": "x"}), pipeline.env)
    assert unknown.action == "ask"
