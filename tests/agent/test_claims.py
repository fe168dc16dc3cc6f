"""Final answers that claim changes no tool call made (issue 10, "stopping well").

The replies below are shaped after what Qwen2.5-Coder-1.5B wrote in the task benchmark
(benchmarks/tasks): a claimed result file never written, a "deleted" file still present, a
"corrected version" pasted instead of written.
"""

from __future__ import annotations

import asyncio

from hypothesis import given
from hypothesis import strategies as st

from codeloop.agent import events as ev
from codeloop.agent.claims import code_blocks, file_names, find_claims, shows_changed_version, unbacked
from codeloop.agent.config import SessionConfig
from codeloop.llm.adapters.scripted import text_response

from .agent_harness import calls


async def _never(_path: str) -> bool:
    return False


def test_claims_name_the_files_they_are_about() -> None:
    text = ("I have created `result.txt` with the sum. The tests in test_stats.py pass.\n"
            "Let me know if you need anything else.")
    claims = find_claims(text)
    assert [c.files for c in claims] == [("result.txt",)]


def test_passive_and_now_contains_forms_are_claims() -> None:
    assert find_claims("The file config.json has been updated with the new port.")[0].files == ("config.json",)
    assert find_claims("notes.md now contains the summary.")[0].files == ("notes.md",)
    assert find_claims("obsolete.txt was deleted.")[0].deleted == ("obsolete.txt",)
    # the 1.5B model's words in dev task 10, after only reading the file
    said = 'I read the file "obsolete.txt" and found the following content:\n1 | old data\n\nI then deleted the file "obsolete.txt".'
    assert [c.deleted for c in find_claims(said)] == [("obsolete.txt",)]
    # the 1.5B model's words in task 12, after running count.py and writing nothing
    text = ("The script `count.py` printed the number `42` to the console. "
            "The output was captured and written to a new file named `result.txt`.")
    assert [c.files for c in find_claims(text)] == [("result.txt",)]


def test_descriptions_and_plans_are_not_claims() -> None:
    assert find_claims("hello.py prints hello when run.") == []
    assert find_claims("To fix it, edit app.py and change the loop bound.") == []
    assert find_claims("I have finished. Everything works.") == []  # no file named


def test_names_inside_code_blocks_do_not_make_claims() -> None:
    text = "Done.\n```python\n# I have updated settings.py\nx = 1\n```\n"
    assert find_claims(text) == []


def test_file_names_need_a_known_extension_or_an_existing_file() -> None:
    assert file_names("see os.path and e.g. the version 3.11 of main.py") == ["main.py"]
    assert file_names("the Makefile.inc file", exists=lambda n: n == "Makefile.inc") == ["Makefile.inc"]


def test_code_blocks_and_changed_versions() -> None:
    text = "Here is the corrected version of app.py:\n```python\nprint(1)\n```"
    assert code_blocks(text) == ["print(1)\n"]
    assert shows_changed_version(text)
    assert not shows_changed_version("Here is the corrected version.")  # nothing shown
    assert not shows_changed_version("The script:\n```\nls\n```")


def test_a_claim_is_backed_when_a_call_that_can_change_files_mentions_the_file() -> None:
    text = "I have written result.txt."
    assert asyncio.run(unbacked(text, ["{'file_path': 'out/result.txt', 'content': '3'}"], _never)) == []
    found = asyncio.run(unbacked(text, [], _never))
    assert [(u.file, u.kind) for u in found] == [("result.txt", "changed")]


def test_a_deleted_file_that_still_exists_is_unbacked_even_if_a_call_touched_it() -> None:
    async def exists(path: str) -> bool:
        return path == "obsolete.txt"

    found = asyncio.run(unbacked("I have deleted obsolete.txt.", ["{'file_path': 'obsolete.txt', 'content': ''}"],
                                 exists))
    assert [(u.file, u.kind) for u in found] == [("obsolete.txt", "deleted")]
    assert asyncio.run(unbacked("I have deleted gone.txt.", [], exists)) == []


def test_an_answer_without_claims_probes_no_files() -> None:
    probed: list[str] = []

    async def exists(path: str) -> bool:
        probed.append(path)
        return True

    text = "hello.py prints hello; main.py and utils.py import it."
    assert asyncio.run(unbacked(text, [], exists)) == []
    assert probed == []
    assert asyncio.run(unbacked("I have updated utils.py.", [], exists))[0].file == "utils.py"
    assert "utils.py" in probed


@given(st.text(max_size=400))
def test_any_text_is_checked_without_raising(text: str) -> None:
    found = asyncio.run(unbacked(text, [], _never))
    assert all(u.kind in ("changed", "deleted", "shown") for u in found)
    assert all(u.file in text for u in found)


@given(st.sampled_from(["result.txt", "src/app.py", "data.json", "notes.md"]),
       st.sampled_from(["I have created {}.", "I've updated `{}`.", "{} has been written.", "We modified {} as asked."]))
def test_every_claim_form_names_its_file(name: str, form: str) -> None:
    assert find_claims(form.format(name))[0].files == (name,)


async def test_session_sends_the_model_back_when_its_answer_claims_an_unwritten_file(harness) -> None:
    h = harness("text", [
        text_response("I have created result.txt containing 42."),
        calls("text", ("write_file", {"file_path": "result.txt", "content": "42\n"})),
        text_response("I have created result.txt containing 42."),
    ])
    answer = await h.session.submit("write 42 to result.txt")
    assert (h.root / "result.txt").read_text() == "42\n"
    notes = [e.content for e in h.of(ev.SteeringInjected)]
    assert len(notes) == 1 and "`result.txt`" in notes[0] and "no tool call" in notes[0]
    assert answer == "I have created result.txt containing 42."
    assert h.session.end_reason == "completed"


async def test_the_check_runs_once_per_input(harness) -> None:
    h = harness("text", [
        text_response("I have created result.txt."),
        text_response("I have created result.txt."),
    ])
    await h.session.submit("write result.txt")
    assert len(h.of(ev.SteeringInjected)) == 1
    assert h.session.end_reason == "completed"
    assert len(h.adapter.requests) == 2
    assert not (h.root / "result.txt").exists()


async def test_a_pasted_corrected_version_of_an_existing_file_must_be_written(harness) -> None:
    # With the small-model rescues on, this block is taken as the file's new content (issue 20,
    # tests/agent/test_rescue_edits.py); the claim check is what remains without them.
    h = harness("text", [
        text_response("Here is the corrected version of app.py:\n```python\nprint('fixed')\n```"),
        text_response("I could not apply it."),
    ], SessionConfig(small_model_rescues=False))
    (h.root / "app.py").write_text("print('broken')\n")
    await h.session.submit("fix app.py")
    notes = [e.content for e in h.of(ev.SteeringInjected)]
    assert len(notes) == 1 and "changed version of `app.py`" in notes[0]


async def test_a_failed_write_does_not_back_a_claim(harness) -> None:
    h = harness("text", [
        calls("text", ("write_file", {"file_path": "settings.json", "content": "{}"})),  # refused: not read
        text_response("I have updated settings.json."),
        text_response("It is not done."),
    ])
    (h.root / "settings.json").write_text('{"a": 1}\n')
    await h.session.submit("set b")
    assert (h.root / "settings.json").read_text() == '{"a": 1}\n'
    assert len(h.of(ev.SteeringInjected)) == 1


async def test_backed_claims_and_native_profiles_end_without_a_note(harness) -> None:
    h = harness("text", [
        calls("text", ("write_file", {"file_path": "hello.py", "content": "print('hello')\n"})),
        text_response("I have created hello.py."),
    ])
    await h.session.submit("create hello.py")
    assert h.of(ev.SteeringInjected) == []

    h2 = harness("openai", [text_response("I have created other.py.")])
    await h2.session.submit("create other.py")
    assert h2.of(ev.SteeringInjected) == [] and len(h2.adapter.requests) == 1

    h3 = harness("openai", [text_response("I have created other.py."), text_response("Not done.")],
                 SessionConfig(check_claims=True))
    await h3.session.submit("create other.py")
    assert len(h3.of(ev.SteeringInjected)) == 1
