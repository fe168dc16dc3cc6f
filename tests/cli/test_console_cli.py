"""``codeloop console`` (issue 37): a headless ``codeloop run --approval-from store`` answered from
the page in a real headless Chromium, the session's transcript, and what another key sees."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from chat_server import ChatServer, text_reply, tool_reply
from test_approvals_cli import WAIT, _no_leftovers, events, start_run, started  # noqa: F401
from test_run_cli import CODELOOP, isolated_env

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the spaces tests' browser helper
from codeloop.policy.pending import SqlitePendingStore
from codeloop.spaces.database import open_store
from spaces.console_browser import browser_fixture, login  # noqa: F401  (the browser fixture)
from spaces.server_process import free_port


def first_waiting(workspace: Path) -> dict[str, Any]:
    """The first call waiting in the run's approvals store (read here: no process per look)."""
    store = SqlitePendingStore(workspace.parent / "state" / "approvals.sqlite3")
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if (workspace.parent / "state" / "approvals.sqlite3").exists() and (found := store.list()):
            return found[0].to_json()
        time.sleep(0.05)
    raise AssertionError("no call waited in the store")


def start_console(workspace: Path) -> tuple[subprocess.Popen[str], str]:
    port = free_port()
    process = started(subprocess.Popen(
        [CODELOOP, "console", "--port", str(port), "--data-dir", str(workspace.parent / "spaces")],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=isolated_env(workspace)))
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()[1]
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return process, url
        except httpx.HTTPError:
            time.sleep(0.1)
    raise AssertionError("codeloop console did not start")


@pytest.fixture
def console(workspace: Path) -> Iterator[tuple[str, str]]:
    """The console's URL and the machine owner's key it wrote."""
    process, url = start_console(workspace)
    key_file = workspace.parent / "state" / "console.key"
    assert key_file.stat().st_mode & 0o777 == 0o600
    yield url, key_file.read_text().strip()
    process.terminate()
    process.communicate(timeout=WAIT)


def test_a_headless_run_is_approved_from_the_page_and_its_transcript_shows_the_call(
        browser: Any, server: ChatServer, workspace: Path, console: tuple[str, str]) -> None:
    url, key = console
    server.replies.extend([tool_reply("shell", {"command": "echo ran >> made.txt"}), text_reply("done")])
    run = start_run(server, workspace, "make it")
    entry = first_waiting(workspace)
    w = login(browser, url, key)
    w.page.goto("/")
    card = w.page.locator(f".pending:has(form[action='/console/local/approvals/{entry['id']}/decide'])")
    assert card.locator("pre.command").text_content() == "echo ran >> made.txt"
    assert w.page.title().startswith("(1) ")
    w.page.fill(".pending input[name=reason]", "fine")
    card.locator("button.approve").click()
    w.page.wait_for_selector("body[data-decided]", timeout=WAIT * 1000)
    assert card.locator("output").text_content() == "approved by you"
    stdout, stderr = run.communicate(timeout=WAIT)
    assert run.returncode == 0, stderr
    assert (workspace / "made.txt").read_text() == "ran\n"
    decided = events(stdout, "approval_decided")
    assert [(d["status"], d["reason"]) for d in decided] == [("approved", "fine")]
    assert decided[0]["decided_by"].startswith("console ")
    # A second answer (the page again, or codeloop approvals) is told who answered first.
    again = w.context.request.post(f"{url}/console/local/approvals/{entry['id']}/decide", headers={
        "Origin": url, "Accept": "application/json"}, form={
        "csrf": card.locator("input[name=csrf]").get_attribute("value") or "", "decision": "denied"})
    assert again.status == 409 and f"already decided by {decided[0]['decided_by']} at " in again.json()["message"]
    # The session's transcript: the call, its output, the approval.
    w.page.goto(f"/console/local/sessions/{entry['session']}")
    text = w.page.text_content("main") or ""
    assert "echo ran >> made.txt" in text and "approval_decided" in text and "make it" in text
    assert "rewind point after shell (turn 1): made.txt" in text  # the checkpoint where undo exists
    w.screenshot("local-session-transcript")
    w.assert_clean()
    # Another key of the same server sees none of it, and cannot answer or read it.
    store = open_store(None, workspace.parent / "spaces")
    tenant = store.create_key("tenant")[1]
    store.close()
    t = login(browser, url, tenant)
    assert "make it" not in t.page.content() and entry["session"] not in t.page.content()
    csrf = t.page.locator("nav input[name=csrf]").get_attribute("value") or ""
    refused = t.context.request.post(f"{url}/console/local/approvals/{entry['id']}/decide",
                                     headers={"Origin": url}, form={"csrf": csrf, "decision": "denied"})
    assert refused.status == 404
    assert t.context.request.get(f"{url}/console/local/sessions/{entry['session']}").status == 404


def test_console_refuses_a_non_loopback_address(workspace: Path) -> None:
    out = subprocess.run([CODELOOP, "console", "--host", "0.0.0.0", "--port", str(free_port())],
                         capture_output=True, text=True, env=isolated_env(workspace), timeout=WAIT)
    assert out.returncode == 2
    assert "loopback only, not '0.0.0.0'" in out.stderr and out.stderr.count("\n") == 1
