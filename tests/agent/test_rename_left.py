"""Issue 20: a rename the model made in one file is made by codeloop in the project's other
files before its answer counts (seen with the 1.5B model on dev task 30: `Acct` renamed in
bank.py, the same edit refused as ambiguous in transfer.py, main.py untouched, then an echo
of codeloop's notes as the answer). Small-model sessions only; through the pipeline."""

from __future__ import annotations

import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from codeloop.agent import events as ev
from codeloop.agent.guards.rename_left import asked_renames, left_lines, only_whole_words
from codeloop.llm.adapters.scripted import text_response
from codeloop.policy.model import Decision

from .agent_harness import calls

TASK = "Rename the class Acct to Account across the project (bank.py, transfer.py and main.py)."
BANK = 'class Acct:\n    def __init__(self, owner):\n        self.owner = owner\n'
TRANSFER = 'from bank import Acct\n\n\ndef open_accounts():\n    return [Acct("a"), Acct("b")]\n'
MAIN = 'from transfer import open_accounts\nfrom bank import Acct\n\nprint(len(open_accounts()), Acct)\n'
ECHO = "To finish, reply with one or two sentences saying what you did."


def _project(root) -> None:
    (root / "bank.py").write_text(BANK)
    (root / "transfer.py").write_text(TRANSFER)
    (root / "main.py").write_text(MAIN)
    (root / "NOTES.md").write_text("Acct is the old name.\n")


def _bank_edit(profile: str = "text") -> Any:
    return calls(profile, ("edit_file", {"file_path": "bank.py", "old_string": "Acct", "new_string": "Account"}))


async def test_the_models_rename_is_made_in_every_other_file_before_its_answer_counts(harness) -> None:
    h = harness("text", [_bank_edit(), text_response(ECHO), text_response(""), text_response("Renamed Acct.")])
    _project(h.root)
    await h.session.submit(TASK)
    for name in ("bank.py", "transfer.py", "main.py"):
        text = (h.root / name).read_text()
        assert "Account" in text and not re.search(r"\bAcct\b", text), name
    assert (h.root / "NOTES.md").read_text() == "Acct is the old name.\n"  # not a file of the rename's kind
    made = [s for s in h.of(ev.ToolCallStart) if s.call_id.startswith("rename-")]
    assert [(s.tool_name, s.arguments["file_path"], s.arguments["replace_all"]) for s in made] == [
        ("edit_file", "transfer.py", True), ("edit_file", "main.py", True)]
    assert [w.code for w in h.of(ev.WarningEvent) if w.code == "verify"] == ["verify", "verify"]


async def test_nothing_is_renamed_before_the_model_began_the_rename(harness) -> None:
    h = harness("text", [text_response("I renamed it.")])
    _project(h.root)
    await h.session.submit(TASK)
    assert not [s for s in h.of(ev.ToolCallStart) if s.call_id.startswith("rename-")]
    assert (h.root / "transfer.py").read_text() == TRANSFER


async def test_a_file_where_the_name_is_part_of_a_longer_one_is_pointed_out_not_edited(harness) -> None:
    h = harness("text", [_bank_edit(), text_response("Done."), text_response("Done.")])
    _project(h.root)
    (h.root / "transfer.py").write_text("from bank import Acct\nAcctType = 1\n")
    (h.root / "main.py").write_text("print(1)\n")
    await h.session.submit(TASK)
    assert (h.root / "transfer.py").read_text() == "from bank import Acct\nAcctType = 1\n"
    steering = [s.content for s in h.of(ev.SteeringInjected)]
    assert any("transfer.py still uses `Acct` (lines 1)" in s for s in steering)


async def test_the_rename_goes_through_the_policy(harness) -> None:
    async def deny_transfer(call: Any, env: Any) -> Decision:
        path = str(call.arguments.get("file_path", ""))
        return Decision.deny("transfer.py is frozen") if path == "transfer.py" else Decision.allow()

    h = harness("text", [_bank_edit(), text_response("Done."), text_response("Done."), text_response("Done.")])
    h.session.policy = deny_transfer
    _project(h.root)
    await h.session.submit(TASK)
    assert (h.root / "transfer.py").read_text() == TRANSFER
    ends = {e.call_id: e for e in h.of(ev.ToolCallEnd)}
    denied = [s for s in h.of(ev.ToolCallStart) if s.arguments.get("file_path") == "transfer.py"]
    assert denied and all(ends[s.call_id].is_error for s in denied)
    assert "Account" in (h.root / "main.py").read_text()


async def test_a_cloud_session_is_left_alone(harness) -> None:
    h = harness("anthropic", [_bank_edit("anthropic"), text_response("Renamed.")])
    _project(h.root)
    assert await h.session.submit(TASK) == "Renamed."
    assert (h.root / "transfer.py").read_text() == TRANSFER


def test_what_counts_as_a_rename_the_task_asks_for() -> None:
    assert asked_renames(TASK) == [("Acct", "Account")]
    assert asked_renames("Rename the function calc_total to compute_total everywhere.") == [
        ("calc_total", "compute_total")]
    assert asked_renames("rename `load` to `read_config` in config.py") == [("load", "read_config")]
    assert asked_renames("Rename it to something better.") == []
    assert asked_renames("Add a function rename_file(path).") == []


@settings(max_examples=200)
@given(st.text(alphabet="ab_ (\n.X", max_size=60))
def test_a_whole_word_replace_touches_exactly_the_lines_pointed_at(text: str) -> None:
    old = "ab"
    if only_whole_words(text, old):
        renamed = text.replace(old, "Q")
        changed = [n for n, (a, b) in enumerate(zip(text.splitlines(), renamed.splitlines(), strict=True), 1)
                   if a != b]
        assert changed == left_lines(text, old)


async def test_files_under_tool_folders_are_not_renamed(harness) -> None:
    h = harness("text", [_bank_edit(), text_response(ECHO), text_response(ECHO), text_response("Renamed Acct.")])
    _project(h.root)
    (h.root / "node_modules" / "lib").mkdir(parents=True)
    (h.root / "node_modules" / "lib" / "vendored.py").write_text("Acct = 1\n")
    await h.session.submit(TASK)
    assert (h.root / "node_modules" / "lib" / "vendored.py").read_text() == "Acct = 1\n"
    assert "Account" in (h.root / "main.py").read_text()
