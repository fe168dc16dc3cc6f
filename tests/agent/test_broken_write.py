"""Issue 20: a small model's whole-file write that would leave a Python or JSON file that
parses unparseable is answered instead of run, and the file keeps every byte (seen: three files
of dev task 13 written as one import line and a fenced `obj['invoice_lines']`)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from codeloop.agent import events as ev
from codeloop.agent.file_edits import content_problem
from codeloop.llm.adapters.scripted import text_response

from .agent_harness import calls

INVOICE = 'from settings import SHOP_NAME\n\n\ndef total(items):\n    return sum(p for _, p in items)\n'
GARBAGE = "from settings import SHOP_NAME, CURRENCY\n```\nobj['invoice_lines']\n```"


def _write(path: str, content: str):
    return calls("text", ("write_file", {"file_path": path, "content": content}))


async def test_a_write_that_breaks_a_python_file_is_refused_and_the_file_keeps_every_byte(harness) -> None:
    fixed = INVOICE.replace("SHOP_NAME\n", "SHOP_NAME, CURRENCY\n")
    h = harness("text", [_write("invoice.py", GARBAGE), _write("invoice.py", fixed), text_response("Done.")])
    (h.root / "invoice.py").write_text(INVOICE)
    await h.session.submit("Import CURRENCY in invoice.py.")
    refused, written = h.of(ev.ToolCallEnd)
    assert refused.is_error and (refused.error or refused.output or "").startswith(
        "Not written: the new content of invoice.py is not valid Python (line 2: invalid syntax (`````)), and "
        "invoice.py is valid Python now")
    assert not written.is_error and (h.root / "invoice.py").read_text() == fixed


async def test_files_that_are_new_or_broken_already_are_written(harness) -> None:
    h = harness("text", [_write("new.py", "def f(:\n"), _write("old.py", "x = (\n"), text_response("Done.")])
    (h.root / "old.py").write_text("y = [\n")
    await h.session.submit("Write new.py and old.py.")  # old.py is shown with the task: read
    assert (h.root / "new.py").read_text() == "def f(:\n" and (h.root / "old.py").read_text() == "x = (\n"


async def test_a_write_that_breaks_a_json_file_is_refused(harness) -> None:
    h = harness("text", [_write("package.json", '{"name": "app",\n"version": }'), text_response("Done.")])
    (h.root / "package.json").write_text('{"name": "app"}\n')
    await h.session.submit("Add a version to package.json.")
    (refused,) = h.of(ev.ToolCallEnd)
    assert refused.is_error and "not valid JSON" in (refused.error or refused.output or "")
    assert (h.root / "package.json").read_text() == '{"name": "app"}\n'


async def test_a_cloud_session_writes_what_it_was_asked_to(harness) -> None:
    read = calls("anthropic", ("read_file", {"file_path": "invoice.py"}))
    write = calls("anthropic", ("write_file", {"file_path": "invoice.py", "content": GARBAGE}))
    h = harness("anthropic", [read, write, text_response("Done.")])
    (h.root / "invoice.py").write_text(INVOICE)
    await h.session.submit("Import CURRENCY in invoice.py.")
    assert (h.root / "invoice.py").read_text() == GARBAGE


@given(st.text(max_size=300), st.sampled_from(["a.py", "a.json", "a.txt"]))
def test_any_content_is_judged_without_error(text: str, path: str) -> None:
    found = content_problem(path, text)
    assert found is None or (found and path != "a.txt")
