"""Issue 20, context up front: the files a task names (their tests and imports within a budget,
the workspace map when it fits) are in the first request, numbered as read_file shows them."""

from __future__ import annotations

from codeloop.agent import events as ev
from codeloop.agent.session import CHARS_PER_TOKEN
from codeloop.agent.task_context import FILES_HEADER, MAP_HEADER, TASK_HEADER, gather_task_context
from codeloop.environments.local import LocalExecutionEnvironment
from codeloop.llm.adapters.scripted import text_response

from .agent_harness import calls

STATS = "def mean(xs):\n    return sum(xs) / (len(xs) - 1)\n\n\ndef total(xs):\n    return sum(xs)\n"
TEST = "from stats import mean\n\n\ndef test_mean():\n    assert mean([1, 2, 3]) == 2\n"


def project(root) -> None:
    (root / "stats.py").write_text(STATS)
    (root / "test_stats.py").write_text(TEST)
    (root / "util.py").write_text("import os\n\n\nclass Helper:\n    pass\n")
    (root / "README.md").write_text("# project\n")


def first_user_message(h) -> str:
    return h.adapter.requests[0].messages[1].text


async def test_the_named_file_its_test_and_the_map_are_in_the_first_request(harness) -> None:
    h = harness("text", [text_response("ok")])
    project(h.root)
    task = "Fix the off-by-one in stats.py"
    await h.session.submit(task)
    sent = first_user_message(h)
    assert sent.startswith(FILES_HEADER) and sent.endswith(f"{TASK_HEADER}\n\n{task}")
    assert "## stats.py\n  1 | def mean(xs):\n  2 |     return sum(xs) / (len(xs) - 1)" in sent
    assert "## test_stats.py (a test of stats.py)\n  1 | from stats import mean" in sent
    assert f"{MAP_HEADER}\nREADME.md\nutil.py: Helper" in sent
    assert "## util.py" not in sent  # not named, not related: only in the map
    assert h.of(ev.UserInput)[0].content == sent  # recorded as sent (a resume sees the same input)


async def test_a_module_function_name_brings_its_file(harness) -> None:
    h = harness("text", [text_response("ok")])
    project(h.root)
    await h.session.submit("Make stats.total skip None values")
    assert "## stats.py\n" in first_user_message(h)
    h2 = harness("text", [text_response("ok")])
    await h2.session.submit("Make stats.nothing faster")  # no such function: nothing named
    assert "## stats.py\n" not in first_user_message(h2)


async def test_shown_files_count_as_read(harness) -> None:
    """write_file over a named file is not refused as unread; the first read of it runs (the
    model may want it again, e.g. after a failed edit), a second identical one is answered."""
    read_stats = calls("text", ("read_file", {"file_path": "stats.py"}))
    h = harness("text", [read_stats, read_stats,
                         calls("text", ("write_file", {"file_path": "stats.py", "content": "x = 1\n"})),
                         text_response("done")])
    project(h.root)
    await h.session.submit("Rewrite stats.py")
    first, again, write = (e.output or e.error or "" for e in h.of(ev.ToolCallEnd))
    assert "def mean" in first and not first.startswith("already done")
    assert again.startswith("already done: you read lines 1-6 of stats.py at step 1")
    assert write.startswith("Wrote")


async def test_nothing_is_added_for_an_empty_workspace_or_a_cloud_profile(harness) -> None:
    h = harness("text", [text_response("ok")])
    await h.session.submit("Create hello.py that prints hello")
    assert first_user_message(h) == "Create hello.py that prints hello"
    h2 = harness("anthropic", [text_response("ok")])
    project(h2.root)
    await h2.session.submit("Fix stats.py")
    assert first_user_message(h2) == "Fix stats.py"


async def test_the_map_is_given_on_the_first_input_only(harness) -> None:
    h = harness("text", [text_response("one"), text_response("two")])
    project(h.root)
    await h.session.submit("hello")
    await h.session.submit("again")
    assert MAP_HEADER in first_user_message(h)
    assert h.adapter.requests[1].messages[-1].text == "again"


async def test_context_fits_a_quarter_of_the_window_and_leaves_room_for_work(harness) -> None:
    """A big named file is cut with a note; the whole first request (system prompt included)
    stays under half of the 8k window, with a reply of max_tokens on top."""
    h = harness("text", [text_response("ok")])
    project(h.root)
    (h.root / "big.py").write_text("".join(f"def f{i}(x):\n    return x + {i}\n" for i in range(800)))
    await h.session.submit("Speed up big.py and stats.py")
    sent = first_user_message(h)
    window = h.profile.context_window_size
    assert len(sent) <= window * CHARS_PER_TOKEN // 4
    assert "[lines " in sent and "call read_file with offset=" in sent
    assert "## stats.py\n" in sent and STATS.splitlines()[-1] in sent  # the small one is whole
    request_tokens = sum(len(m.text) for m in h.adapter.requests[0].messages) / CHARS_PER_TOKEN
    assert request_tokens + h.profile.max_output_tokens <= window * 3 // 4


async def test_a_cut_file_is_not_taken_as_read(harness) -> None:
    h = harness("text", [calls("text", ("read_file", {"file_path": "big.py"})), text_response("ok")])
    (h.root / "big.py").write_text("x = 1\n" * 3000)
    await h.session.submit("Look at big.py")
    assert not (h.of(ev.ToolCallEnd)[0].output or "").startswith("already done")


async def test_gather_names_paths_and_file_names(tmp_path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "data.json").write_text('{"a": 1}\n')
    (tmp_path / "pkg" / "mod.py").write_text("from . import helper\n\n\ndef run():\n    pass\n")
    (tmp_path / "pkg" / "helper.py").write_text("def help():\n    pass\n")
    (tmp_path / "pkg" / "__init__.py").write_text("")
    env = LocalExecutionEnvironment(str(tmp_path))
    context = await gather_task_context(env, "Set a in data.json, then call pkg.mod.run from `pkg/mod.py`", 8_000)
    assert [f.path for f in context.files] == ["pkg/data.json", "pkg/mod.py", "pkg/helper.py"]
    assert "## pkg/helper.py (imported by pkg/mod.py)" in context.text
    nothing = await gather_task_context(env, "Set a in data.json", 100)
    assert nothing.text == "" and nothing.files == ()
    given = await gather_task_context(env, 'Set a in data.json:\n{"a": 1}\n', 8_000, with_map=False)
    assert given.text == ""  # its text is in the task already (a custom command's @file)
