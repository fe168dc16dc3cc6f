"""Small-model rescues (issue 20) that turn what a small model wrote into the change it meant:
a tool named like a file (or a wish), and a file name followed by a fenced block (aider's
"whole" format, or the functions to replace). The calls run through the pipeline: policy,
checkpoints and events hold. Local / small-window profiles only."""

from __future__ import annotations

import ast
import json
import keyword
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from codeloop.agent import events as ev
from codeloop.agent.config import SessionConfig
from codeloop.agent.reply_rescue import FENCED_EDITS
from codeloop.llm.adapters.scripted import text_response, tool_call_response
from codeloop.policy.model import Decision

from .agent_harness import calls, tagged

STUB = 'from typing import List\n\n\ndef total(values: List[int]) -> int:\n    """Return the sum of values."""\n'
IMPLEMENTED = 'from typing import List\n\n\ndef total(values: List[int]) -> int:\n    return sum(values)\n'
FUNCTION = "def total(values: List[int]) -> int:\n    return sum(values)\n"
APP = 'import os\n\n\ndef greet(name):\n    return "Hi " + name\n\n\nprint(greet("Ada"))\n'


def _ends(h) -> list[Any]:
    return h.of(ev.ToolCallEnd)


def _starts(h) -> list[tuple[str, dict[str, Any]]]:
    return [(e.tool_name, e.arguments) for e in h.of(ev.ToolCallStart)]


# -- a tool named like a file ---------------------------------------------------------------


async def test_a_call_to_a_tool_named_like_the_file_with_code_edits_that_file(harness) -> None:
    h = harness("text", [text_response(f'<tool name="solution.py">\n```python\n{FUNCTION}```\n'),
                         text_response("I implemented total.")])
    (h.root / "solution.py").write_text(STUB)
    assert await h.session.submit("Fill in solution.py.") == "I implemented total."
    assert (h.root / "solution.py").read_text() == IMPLEMENTED  # the import stays
    ((name, args),) = _starts(h)
    assert name == "edit_file" and args["old_string"] == '    """Return the sum of values."""\n'
    assert not _ends(h)[0].is_error


async def test_a_name_without_its_extension_and_a_bare_body_mean_the_same(harness) -> None:
    h = harness("text", [text_response(f'<tool name="solution">\n{FUNCTION}'), text_response("Done.")])
    (h.root / "solution.py").write_text(STUB)
    await h.session.submit("Implement total.")
    assert (h.root / "solution.py").read_text() == IMPLEMENTED


async def test_a_new_file_named_as_a_tool_with_content_is_created(harness) -> None:
    h = harness("text", [text_response('<tool name="hello.py">\n<content>\nprint("hello")\n</content>\n'),
                         text_response("Created hello.py.")])
    await h.session.submit("Create hello.py that prints hello.")
    assert (h.root / "hello.py").read_text() == 'print("hello")\n'
    assert _starts(h) == [("write_file", {"file_path": "hello.py", "content": 'print("hello")\n'})]


async def test_a_file_named_as_a_tool_without_content_gets_the_exact_calls_for_that_file(harness) -> None:
    h = harness("text", [text_response('<tool name="solution.py">\n<file_path>solution.py</file_path>\n'),
                         text_response("ok")])
    (h.root / "solution.py").write_text(STUB)
    await h.session.submit("Implement total.")
    (end,) = _ends(h)
    assert end.is_error and (end.error or "").startswith("Unknown tool: solution.py. solution.py is a file. "
                                                         "To read it:\n")
    assert '<tool name="read_file">\n<file_path>solution.py</file_path>\n</tool>' in (end.error or "")
    assert '<tool name="edit_file">\n<file_path>solution.py</file_path>\n<old_string>OLD TEXT</old_string>' in (
        end.error or "")
    assert (h.root / "solution.py").read_text() == STUB


async def test_a_name_several_files_have_lists_them(harness) -> None:
    h = harness("text", [text_response('<tool name="data">\n'), text_response("ok")])
    (h.root / "data.json").write_text("{}\n")
    (h.root / "sub").mkdir()
    (h.root / "sub" / "data.csv").write_text("a\n")
    await h.session.submit("look at the data")
    error = _ends(h)[0].error or ""
    assert error.startswith("Unknown tool: data. These files have that name: data.json, sub/data.csv. To read it:")


async def test_a_wish_gets_the_exact_form_of_the_closest_tools(harness) -> None:
    h = harness("text", [text_response('<tool name="rename_function">\n<old_name>total</old_name>\n'),
                         text_response("ok")])
    await h.session.submit("Rename total to sum_all.")
    error = _ends(h)[0].error or ""
    assert error.startswith("Unknown tool: rename_function. Available tools: ")
    assert error.endswith("The closest: edit_file. Write the call exactly like this:\n<tool name=\"edit_file\">\n"
                          "<file_path>FILE_PATH</file_path>\n<old_string>OLD_STRING</old_string>\n"
                          "<new_string>NEW_STRING</new_string>\n</tool>")


async def test_a_native_small_session_keeps_the_call_id_so_the_history_pairs(harness) -> None:
    h = harness("anthropic", [tool_call_response(("solution.py", {"content": FUNCTION})), text_response("Done.")],
                SessionConfig(small_model_rescues=True))
    (h.root / "solution.py").write_text(STUB)
    await h.session.submit("Implement total.")
    assert (h.root / "solution.py").read_text() == IMPLEMENTED
    sent = h.adapter.requests[1].messages
    call = sent[-2].content[-1].tool_call
    result = sent[-1].content[0].tool_result
    assert call is not None and result is not None and call.name == "edit_file" and result.tool_call_id == call.id


async def test_a_constrained_reply_naming_a_file_as_the_tool_is_understood(harness) -> None:
    reply = json.dumps({"tool": "solution.py", "arguments": {"content": FUNCTION}})
    h = harness("text", [text_response(reply), text_response('{"final_answer": "Done."}')],
                SessionConfig(constrained_decoding="on"))
    (h.root / "solution.py").write_text(STUB)
    assert await h.session.submit("Implement total.") == "Done."
    assert (h.root / "solution.py").read_text() == IMPLEMENTED


# -- a file name followed by a fenced block ---------------------------------------------------


async def test_the_function_shown_under_the_files_name_replaces_that_function_only(harness) -> None:
    h = harness("text", [text_response(f"solution.py\n```python\n{FUNCTION}```"), text_response("Done.")])
    (h.root / "solution.py").write_text(STUB)
    assert await h.session.submit("Fill in solution.py.") == "Done."
    assert (h.root / "solution.py").read_text() == IMPLEMENTED
    assert [e.is_error for e in _ends(h)] == [False]


async def test_a_fixed_function_keeps_the_rest_of_the_file_and_new_functions_are_added(harness) -> None:
    block = 'def greet(name):\n    return f"Hello {name}"\n\n\ndef shout(name):\n    return greet(name).upper()\n'
    h = harness("text", [text_response(f"**app.py**\n```python\n{block}```"), text_response("Fixed.")])
    (h.root / "app.py").write_text(APP)
    await h.session.submit("Fix greet in app.py and add shout.")
    assert (h.root / "app.py").read_text() == (
        'import os\n\n\ndef greet(name):\n    return f"Hello {name}"\n\n\ndef shout(name):\n'
        '    return greet(name).upper()\n\n\nprint(greet("Ada"))\n')


async def test_a_new_file_shown_under_its_name_is_created(harness) -> None:
    h = harness("text", [text_response("File: hello.py\n\n```python\nprint('hello')\n```"), text_response("Done.")])
    await h.session.submit("Create hello.py that prints hello.")
    assert (h.root / "hello.py").read_text() == "print('hello')\n"
    (start,) = h.of(ev.ToolCallStart)
    assert start.tool_name == "write_file"


async def test_a_whole_file_goes_through_write_files_read_first_check(harness) -> None:
    whole = 'def greet(name):\n    return "Hello " + name\n\n\nprint(greet("Bob"))\n'
    h = harness("text", [text_response(f"app.py\n```python\n{whole}```"),
                         text_response(tagged("read_file", {"file_path": "app.py"})),
                         text_response(f"app.py\n```python\n{whole}```"), text_response("Done.")])
    (h.root / "app.py").write_text(APP)
    await h.session.submit("Greet Bob.")
    refused, read, written = _ends(h)
    assert refused.is_error and "you have not read it in this session" in (refused.error or "")
    assert not read.is_error and not written.is_error
    assert (h.root / "app.py").read_text() == whole


async def test_a_block_that_drops_functions_and_is_not_just_definitions_is_not_applied(harness) -> None:
    block = 'def shout(name):\n    return name.upper()\n\n\nprint(shout("x"))\n'
    h = harness("text", [text_response(f"app.py\n```python\n{block}```"), text_response("Sorry.")])
    (h.root / "app.py").write_text(APP)
    await h.session.submit("Add shout.")
    (end,) = _ends(h)
    assert end.is_error and (end.error or "").startswith(
        "The code shown for app.py was not applied: it leaves out `greet`, which app.py defines")
    assert '<tool name="write_file">\n<file_path>app.py</file_path>' in (end.error or "")
    assert (h.root / "app.py").read_text() == APP


async def test_blocks_without_a_naming_line_or_equal_to_the_file_are_answers(harness) -> None:
    for reply in ("The function:\n```python\ndef f():\n    return 1\n```", f"solution.py\n```python\n{STUB}```",
                  "Run it with:\n```bash\npython solution.py\n```", "solution.py\n```\nTraceback (most recent call last):\n```"):
        h = harness("text", [text_response(reply)], SessionConfig(check_claims=False))
        (h.root / "solution.py").write_text(STUB)
        assert await h.session.submit("Implement total.") == reply
        assert not h.of(ev.ToolCallStart), reply


async def test_a_path_outside_the_workspace_is_refused_by_the_pipeline(harness, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    h = harness("text", [text_response("../evil.py\n```python\nx = 1\n```"), text_response("ok")])
    h.session.environment = type(h.env)(str(work))  # the harness's workspace is tmp_path: one level down
    await h.session.submit("x")
    (end,) = _ends(h)
    assert _starts(h) == [("write_file", {"file_path": "../evil.py", "content": "x = 1\n"})]
    assert end.is_error and "outside the workspace" in (end.error or "") and not (tmp_path / "evil.py").exists()


async def test_rescued_edits_pass_the_policy_the_checkpoint_and_the_events(harness) -> None:
    checkpointed: list[str] = []

    class Seam:
        def before(self, call: Any, effects: Any, paths: Any, step: Any) -> None:
            checkpointed.append(call.name)

        def after(self, call: Any, effects: Any, paths: Any, step: Any, outcome: Any) -> None:
            pass

    checkpoint = Seam()

    async def deny_writes(call: Any, env: Any) -> Decision:
        return Decision.deny("writes are off") if call.name == "write_file" else Decision.allow()

    h = harness("text", [text_response("hello.py\n```python\nprint('hello')\n```"),
                         text_response(f"solution.py\n```python\n{FUNCTION}```"), text_response("ok")])
    (h.root / "solution.py").write_text(STUB)
    h.session.policy, h.session.checkpoint = deny_writes, checkpoint
    await h.session.submit("x")
    denied, edited = _ends(h)
    assert denied.is_error and "denied by policy: writes are off" in (denied.error or "")
    assert not (h.root / "hello.py").exists()
    assert not edited.is_error and checkpointed == ["edit_file"]
    assert [s.tool_name for s in h.of(ev.ToolCallStart)] == ["write_file", "edit_file"]


async def test_a_cloud_session_takes_a_named_block_as_an_answer(harness) -> None:
    reply = f"solution.py\n```python\n{FUNCTION}```"
    h = harness("anthropic", [text_response(reply), tool_call_response(("solution.py", {"content": FUNCTION}))])
    (h.root / "solution.py").write_text(STUB)
    assert await h.session.submit("Implement total.") == reply
    assert not h.of(ev.ToolCallStart) and (h.root / "solution.py").read_text() == STUB
    h.adapter.script.append(text_response("end"))
    await h.session.submit("again")
    assert (_ends(h)[0].error or "").startswith("Unknown tool 'solution.py'")


def test_the_note_says_how_the_reply_was_read() -> None:
    assert FENCED_EDITS == "file edits from fenced blocks"


# -- the compact text prompt teaches the form ----------------------------------------------


def _prompt_example() -> tuple[str, str]:
    from codeloop.agent.named_blocks import named_blocks
    from codeloop.profiles.prompts import TEXT_COMPACT

    ((block),) = named_blocks(TEXT_COMPACT)
    return block.path, block.content


async def test_the_small_models_prompt_shows_a_named_block_and_such_a_reply_edits_the_file(harness) -> None:
    path, example = _prompt_example()
    assert path.endswith(".py") and example.startswith("def ")
    h = harness("text", [text_response(f"solution.py\n```python\n{FUNCTION}```"), text_response("Done.")])
    assert h.session.profile.compact  # the 8k local window: the prompt that shows the form
    (h.root / "solution.py").write_text(STUB)
    await h.session.submit("Implement total.")
    assert (h.root / "solution.py").read_text() == IMPLEMENTED
    assert f"{path}\n```python\n{example}```" in h.session.system_prompt


async def test_the_prompts_own_example_copied_into_a_reply_changes_nothing(harness) -> None:
    path, example = _prompt_example()
    own = 'def greet(name):\n    return "Hi " + name\n'
    h = harness("text", [text_response(f"{path}\n```python\n{example}```"), text_response("Done."),
                         text_response(f"{path}\n```python\n{own}```"), text_response("Done.")])
    await h.session.submit("Say hello.")
    assert not (h.root / path).exists() and not h.of(ev.ToolCallStart)
    await h.session.submit("Now write the greeting module.")  # the model's own code under that name is a change
    assert (h.root / path).read_text() == own


# -- the task's files copied back in their numbered form, changed ---------------------------

GREETING = 'def greeting(name):\n    return f"Hi, {name}!"\n\n\nif __name__ == "__main__":\n    print(greeting("Bob"))\n'


def _as_shown(files: dict[str, str], task: str) -> str:
    """A reply copying the task message's form: a heading per file, its lines numbered as codeloop
    numbers them (written out here, not produced by codeloop), then the task."""
    parts = ["# Files of the task (already read for you, numbered as read_file shows them)"]
    for path, text in files.items():
        rows = text.split("\n")[:-1]
        parts.append(f"## {path}\n" + "\n".join(f"{n:>3} | {row}" for n, row in enumerate(rows, 1)) + "\n")
    return "\n".join(parts) + f"\n# Task\n\n{task}"


async def test_the_tasks_listing_copied_back_with_the_change_made_edits_the_file(harness) -> None:
    task = "In greeting.py, change the greeting word from Hi to Hello."
    fixed = GREETING.replace("Hi,", "Hello,")
    h = harness("text", [text_response(_as_shown({"greeting.py": fixed}, task)), text_response("Done.")])
    (h.root / "greeting.py").write_text(GREETING)
    assert await h.session.submit(task) == "Done."
    assert (h.root / "greeting.py").read_text() == fixed
    assert _starts(h) == [("write_file", {"file_path": "greeting.py", "content": fixed})]  # the whole file, as shown
    assert [e.is_error for e in _ends(h)] == [False]


async def test_a_rename_copied_back_over_two_files_edits_the_one_still_to_change(harness) -> None:
    shop = "def calc_total(prices, tax_rate):\n    return round(sum(prices) * (1 + tax_rate), 2)\n"
    main = "from shop import calc_total\n\nprint(calc_total([1.0], 0.2))\n"
    task = "Rename calc_total to compute_total in shop.py and main.py."
    renamed = {"shop.py": shop.replace("calc_total", "compute_total"), "main.py": main.replace("calc_total", "compute_total")}
    h = harness("text", [calls("text", ("edit_file", {"file_path": "shop.py", "old_string": "calc_total",
                                                       "new_string": "compute_total"})),
                         text_response(_as_shown(renamed, task)), text_response("Renamed.")])
    (h.root / "shop.py").write_text(shop)
    (h.root / "main.py").write_text(main)
    await h.session.submit(task)
    assert {p: (h.root / p).read_text() for p in renamed} == renamed
    assert [(n, a["file_path"]) for n, a in _starts(h)] == [("edit_file", "shop.py"), ("write_file", "main.py")]


async def test_the_tasks_own_listing_copied_back_after_an_edit_does_not_undo_it(harness) -> None:
    task = "In greeting.py, change the greeting word from Hi to Hello."
    fixed = GREETING.replace("Hi,", "Hello,")
    h = harness("text", [calls("text", ("edit_file", {"file_path": "greeting.py", "old_string": "Hi,",
                                                       "new_string": "Hello,"})),
                         text_response(_as_shown({"greeting.py": GREETING}, task)),
                         text_response("Changed Hi to Hello in greeting.py.")])
    (h.root / "greeting.py").write_text(GREETING)
    await h.session.submit(task)
    assert (h.root / "greeting.py").read_text() == fixed
    assert [n for n, _ in _starts(h)] == ["edit_file"]


async def test_a_listing_that_stops_before_the_files_end_changes_nothing(harness) -> None:
    long = "".join(f"LINE_{i} = {i}\n" for i in range(1, 41))
    first = long.split("\n")[:10]
    first[2] = "LINE_3 = 300"
    reply = "## settings.py\n" + "\n".join(f"{n:>3} | {row}" for n, row in enumerate(first, 1)) + "\n"
    h = harness("text", [text_response(reply), text_response("Set LINE_3.")], SessionConfig(check_claims=False))
    (h.root / "settings.py").write_text(long)
    await h.session.submit("Set LINE_3 to 300 in settings.py.")
    assert (h.root / "settings.py").read_text() == long and not h.of(ev.ToolCallStart)


async def test_a_cloud_session_takes_a_listing_as_an_answer(harness) -> None:
    reply = _as_shown({"greeting.py": GREETING.replace("Hi,", "Hello,")}, "Say Hello.")
    h = harness("anthropic", [text_response(reply)])
    (h.root / "greeting.py").write_text(GREETING)
    assert await h.session.submit("Say Hello.") == reply
    assert (h.root / "greeting.py").read_text() == GREETING and not h.of(ev.ToolCallStart)


# -- new definitions added after a file's code (the stub draft of a function to add) -----------

NAMES_ST = st.lists(st.from_regex(r"[a-z]{1,6}", fullmatch=True).filter(lambda n: not keyword.iskeyword(n)),
                    min_size=1, max_size=3, unique=True)


@settings(max_examples=200, deadline=None)
@given(NAMES_ST, NAMES_ST, st.booleans())
def test_new_definitions_are_added_after_the_code_and_keep_every_line(old_names: list[str], new_names: list[str],
                                                                       with_import: bool) -> None:
    from codeloop.agent.file_edits import appended_definitions

    new_names = [f"new_{n}" for n in new_names]
    old = "import os\n\n" + "".join(f"\n\ndef {n}():\n    return {i}\n" for i, n in enumerate(old_names))
    new = ("import json\n\n" if with_import else "") + "\n\n".join(f"def {n}(x):\n    return x\n" for n in new_names)
    merged = appended_definitions("m.py", old, new)
    assert merged is not None
    assert merged.startswith("import os\n" + ("import json\n" if with_import else ""))
    assert merged.replace("import json\n", "").startswith(old.rstrip("\n"))  # every old line, in place
    tree = ast.parse(merged)
    assert [f.name for f in tree.body if isinstance(f, ast.FunctionDef)] == [*old_names, *new_names]
    assert appended_definitions("m.py", old, f"def {old_names[0]}():\n    return 9\n") is None  # not new: no add
