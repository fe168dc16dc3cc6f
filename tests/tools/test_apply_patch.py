"""apply_patch against codex's scenario fixtures (loop spec Appendix A), and where codeloop
departs from codex's standalone binary: a patch is all or nothing (issue 19)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from codeloop.tools.apply_patch import apply_patch_text
from codeloop.tools.errors import PatchError
from codeloop.tools.patch_apply import NOTHING_WRITTEN, PatchApplyError

from .snapshot import FIXTURES, PARTIAL_SCENARIOS, scenario_names, snapshot
from .workspace_fixture import Workspace


@pytest.mark.parametrize("name", scenario_names())
async def test_a_codex_scenario_via_tool(name: str, ws: Workspace) -> None:
    case = FIXTURES / name
    if (case / "input").exists():
        shutil.copytree(case / "input", ws.root, dirs_exist_ok=True)
    patch = (case / "patch.txt").read_bytes().decode("utf-8")
    if name in PARTIAL_SCENARIOS:
        with pytest.raises(PatchError):
            await apply_patch_text(ws.env, patch, partial=True)
    else:
        await ws.call("apply_patch", {"patch": patch})
    assert snapshot(ws.root) == snapshot(case / "expected")


@pytest.mark.parametrize("name", sorted(PARTIAL_SCENARIOS))
async def test_a_partial_scenario_via_tool_writes_nothing(name: str, ws: Workspace) -> None:
    case = FIXTURES / name
    before = snapshot(ws.root)
    result = await ws.call("apply_patch", {"patch": (case / "patch.txt").read_text(encoding="utf-8")})
    assert result.is_error and "Nothing was written" in result.output
    assert snapshot(ws.root) == before


def test_a_all_23_scenarios_are_present() -> None:
    assert len(scenario_names()) == 23


async def test_a_success_summary_lists_added_modified_deleted(ws: Workspace) -> None:
    ws.write("mod.txt", "a\nb\n")
    ws.write("gone.txt", "x\n")
    result = await ws.call(
        "apply_patch",
        {"patch": "*** Begin Patch\n*** Add File: new.txt\n+hi\n*** Update File: mod.txt\n@@\n a\n-b\n+B\n"
         "*** Delete File: gone.txt\n*** End Patch\n"},
    )
    assert not result.is_error
    assert result.output == "Success. Updated the following files:\nA new.txt\nM mod.txt\nD gone.txt\n"
    assert ws.read("mod.txt") == b"a\nB\n"


async def test_a_partial_success_is_reported_with_codex_message(ws: Workspace) -> None:
    patch = "*** Begin Patch\n*** Add File: created.txt\n+hello\n*** Update File: missing.txt\n@@\n-old\n+new\n*** End Patch"
    result = await ws.call("apply_patch", {"patch": patch})
    assert result.is_error
    assert result.output.startswith("Failed to read file to update missing.txt: ")
    assert result.output.endswith("Nothing was written: a patch applies completely or not at all. Fix it and send the whole patch again.")
    assert not (ws.root / "created.txt").exists()
    with pytest.raises(PatchApplyError) as caught:
        await apply_patch_text(ws.env, patch, partial=True)
    assert str(caught.value).startswith("Failed to read file to update missing.txt: ")
    assert "Nothing was written" not in str(caught.value)
    assert caught.value.partial.added == ["created.txt"]
    assert ws.read("created.txt") == b"hello\n"


async def test_a_missing_context_message_and_file_untouched(ws: Workspace) -> None:
    ws.write("m.txt", "line1\nline2\n")
    result = await ws.call("apply_patch", {"patch": "*** Begin Patch\n*** Update File: m.txt\n@@\n-missing\n+x\n*** End Patch"})
    assert result.is_error
    assert result.output == "Failed to find expected lines in m.txt:\nmissing\n" + NOTHING_WRITTEN
    assert ws.read("m.txt") == b"line1\nline2\n"


async def test_a_context_hint_not_found_message(ws: Workspace) -> None:
    ws.write("m.txt", "a\n")
    result = await ws.call("apply_patch", {"patch": "*** Begin Patch\n*** Update File: m.txt\n@@ def nope():\n-a\n+b\n*** End Patch"})
    assert result.output == "Failed to find context 'def nope():' in m.txt\n" + NOTHING_WRITTEN


async def test_a_empty_patch_modifies_nothing(ws: Workspace) -> None:
    result = await ws.call("apply_patch", {"patch": "*** Begin Patch\n*** End Patch"})
    assert result.is_error and result.output == "No files were modified."


async def test_a_context_hint_then_trim_and_unicode_passes(ws: Workspace) -> None:
    ws.write("u.py", "def f():\n    x = 1\ndef g():\n    s = \u201chi\u201d \u2013 ok   \n    x = 1\n")
    patch = (
        "*** Begin Patch\n*** Update File: u.py\n@@ def g():\n-s = \"hi\" - ok\n+    s = 'bye'\n"
        "@@\n-    x = 1\n+    x = 2\n*** End Patch"
    )
    result = await ws.call("apply_patch", {"patch": patch})
    assert not result.is_error, result.output
    assert ws.read("u.py") == b"def f():\n    x = 1\ndef g():\n    s = 'bye'\n    x = 2\n"


async def test_a_end_of_file_marker_matches_the_last_lines(ws: Workspace) -> None:
    ws.write("t.txt", "x\ny\nx\n")
    result = await ws.call("apply_patch", {"patch": "*** Begin Patch\n*** Update File: t.txt\n@@\n-x\n+z\n*** End of File\n*** End Patch"})
    assert not result.is_error
    assert ws.read("t.txt") == b"x\ny\nz\n"


async def test_a_crlf_lines_outside_the_hunk_are_kept(ws: Workspace) -> None:
    # Like codex 0.169: the file keeps its endings, the new line takes CRLF too.
    ws.write("w.txt", "one\r\ntwo\r\nthree\r\n")
    result = await ws.call("apply_patch", {"patch": "*** Begin Patch\n*** Update File: w.txt\n@@\n one\n-two\n+2\n*** End Patch"})
    assert not result.is_error
    assert ws.read("w.txt") == b"one\r\n2\r\nthree\r\n"


async def test_a_heredoc_wrapped_patch_applies(ws: Workspace) -> None:
    result = await ws.call("apply_patch", {"patch": "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: h.txt\n+x\n*** End Patch\nEOF\n"})
    assert not result.is_error and ws.read("h.txt") == b"x\n"


@pytest.mark.parametrize("target", ["../escape.txt", "/etc/passwd-codeloop"])
async def test_a_paths_outside_the_workspace_are_refused(ws: Workspace, target: str) -> None:
    result = await ws.call("apply_patch", {"patch": f"*** Begin Patch\n*** Add File: {target}\n+x\n*** End Patch"})
    assert result.is_error
    assert not (ws.root.parent / "escape.txt").exists()
    assert not Path("/etc/passwd-codeloop").exists()


async def test_a_move_outside_the_workspace_is_refused_and_source_kept(ws: Workspace) -> None:
    ws.write("a.txt", "a\n")
    result = await ws.call(
        "apply_patch", {"patch": "*** Begin Patch\n*** Update File: a.txt\n*** Move to: ../b.txt\n@@\n-a\n+b\n*** End Patch"}
    )
    assert result.is_error
    assert ws.read("a.txt") == b"a\n"
    assert not (ws.root.parent / "b.txt").exists()


async def test_a_binary_file_update_is_refused(ws: Workspace) -> None:
    ws.write("bin.dat", b"\xff\xfe\x00\x01")
    result = await ws.call("apply_patch", {"patch": "*** Begin Patch\n*** Update File: bin.dat\n@@\n-x\n+y\n*** End Patch"})
    assert result.is_error and "Failed to read file to update bin.dat" in result.output
    assert ws.read("bin.dat") == b"\xff\xfe\x00\x01"


async def test_a_parse_error_is_an_error_result(ws: Workspace) -> None:
    result = await ws.call("apply_patch", {"patch": "*** Begin Patch\n*** Frobnicate File: foo\n*** End Patch"})
    assert result.is_error and result.output.startswith("Invalid patch hunk on line 2: '*** Frobnicate File: foo'")


async def test_a_absolute_paths_inside_the_workspace_are_accepted(ws: Workspace) -> None:
    target = ws.root / "abs" / "x.txt"
    result = await ws.call("apply_patch", {"patch": f"*** Begin Patch\n*** Add File: {target}\n+x\n*** End Patch"})
    assert not result.is_error, result.output
    assert result.output == f"Success. Updated the following files:\nA {target}\n"
    assert target.read_bytes() == b"x\n"


CONTRACT = FIXTURES.parent / "codex_contract"


@pytest.mark.parametrize("name", sorted(p.parent.name for p in CONTRACT.glob("*/patch.txt")))
async def test_issue19_codex_contract_scenario_via_tool(name: str, ws: Workspace) -> None:
    case = CONTRACT / name
    shutil.copytree(case / "input", ws.root, dirs_exist_ok=True)
    result = await ws.call("apply_patch", {"patch": (case / "patch.txt").read_bytes().decode("utf-8")})
    assert not result.is_error, result.output
    assert snapshot(ws.root) == snapshot(case / "expected")


def test_issue19_all_8_contract_scenarios_are_present() -> None:
    assert len(list(CONTRACT.glob("*/patch.txt"))) == 8
