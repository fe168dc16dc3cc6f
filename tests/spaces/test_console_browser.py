"""The web console in a real headless Chromium against a real ``codeloop spaces serve`` (issue 37).

One server and one browser for the module; each test logs in with its own browser context.
Every page is checked for dialogs (an XSS payload's ``alert``) and for Content-Security-Policy
violations the browser reports.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest

from .console_browser import browser_fixture, login, new_page  # noqa: F401  (the browser fixture)
from .server_process import ServerProcess

WAIT_MS = 60_000
"""How long a page may take to show what the test waits for (not a measured threshold)."""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    srv = ServerProcess(tmp_path_factory.mktemp("console-data")).start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def alice(server: ServerProcess) -> str:
    return server.create_key("alice")


@pytest.fixture(scope="module")
def bob(server: ServerProcess) -> str:
    return server.create_key("bob")


def api(server: ServerProcess, key: str) -> httpx.Client:
    return httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {key}"}, timeout=60)


def ops(*operations: dict[str, Any]) -> dict[str, Any]:
    return {"protocolVersion": "1.0", "operations": list(operations)}


def new_space(c: httpx.Client) -> str:
    r = c.post("/v1/spaces", json={"name": "demo"})
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


def paused_run(c: httpx.Client, sid: str, *operations: dict[str, Any]) -> str:
    out = c.post(f"/v1/spaces/{sid}/runs", json=ops(*operations)).json()
    assert out["status"] == "awaiting_approval", out
    return str(out["runId"])


def in_background(server: ServerProcess, key: str, sid: str, message: dict[str, Any]) -> threading.Thread:
    def post() -> None:
        with api(server, key) as c:
            c.post(f"/v1/spaces/{sid}/runs", json=message)
    t = threading.Thread(target=post, daemon=True)
    t.start()
    return t


def first_run(c: httpx.Client, sid: str) -> str:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        runs = c.get(f"/v1/spaces/{sid}/runs").json()["runs"]
        if runs:
            return str(runs[0]["runId"])
        time.sleep(0.02)
    raise AssertionError("the run did not start")


XSS_NAME = '<img src=x onerror="window.__xss=1;alert(1)">.txt'
XSS_FILE = '<script>window.__xss=2;alert(2)</script>\n<img src=x onerror="alert(3)">\n'
XSS_OUT = '<img src=y onerror="window.__xss=4;alert(4)"><script>alert(5)</script>'


def test_login_watch_a_run_stream_live_and_approve_rm_rf_build_once(
        browser: Any, server: ServerProcess, alice: str) -> None:
    w = login(browser, server.url, alice)
    with api(server, alice) as c:
        sid = new_space(c)
        t = in_background(server, alice, sid, ops(
            {"type": "createFile", "path": "build/out.o", "content": "obj\n"},
            {"type": "shell", "command": "sleep 1.5; echo first"},
            {"type": "shell", "command": f"printf '%s\\n' '{XSS_OUT}'"},
            {"type": "createFile", "path": XSS_NAME, "content": XSS_FILE},
            {"type": "shell", "id": "clean", "command": "rm -rf build && echo removed >> log"},
            {"type": "message", "content": "after the clean"}))
        rid = first_run(c, sid)
        w.page.goto(f"/console/runs/{rid}")
        assert w.page.text_content("#run-state") == "running"
        # Events arrive live (the page loaded while the first shell slept), then the pause
        # reloads the page with the pending approval.
        w.page.wait_for_selector("li.ev-shell >> text=first", timeout=WAIT_MS)
        w.page.wait_for_selector(".pending button.approve", timeout=WAIT_MS)
        t.join(60)
        card = w.page.locator(".pending")
        assert card.locator("pre.command").text_content() == "rm -rf build && echo removed >> log"
        assert card.locator("dd code").first.text_content() == "shell.approvalRequired"
        assert w.page.title().startswith("(1) ")
        w.screenshot("run-pending-approval")
        w.page.fill(".pending input[name=reason]", "build is generated")
        w.page.click(".pending button.approve")
        w.page.wait_for_selector("body[data-run-ended]", timeout=WAIT_MS)
        assert "approved by you; the run is now completed" in card.locator("output").text_content()
        w.page.wait_for_selector("li.ev-message", timeout=WAIT_MS)
        assert c.get(f"/v1/spaces/{sid}/files/log").content == b"removed\n"  # ran once
        assert c.get(f"/v1/spaces/{sid}/files/build").status_code == 404
        view = c.get(f"/v1/runs/{rid}").json()
        assert [e["type"] for e in view["events"]][-2:] == ["shell", "message"]
        # XSS payloads in a file name, a file and command output: text, never markup.
        w.page.reload()
        body = w.page.text_content("main")
        assert XSS_OUT in body and XSS_NAME in body and "+<script>window.__xss=2;alert(2)</script>" in body
        assert w.page.locator("main img").count() == 0 and w.page.locator("main script:not([type])").count() == 0
        assert w.page.evaluate("window.__xss === undefined")
        w.screenshot("run-completed")
        w.assert_clean()


def test_payloads_streamed_live_show_as_text_and_the_csp_header_is_sent(
        browser: Any, server: ServerProcess, alice: str) -> None:
    w = login(browser, server.url, alice)
    with api(server, alice) as c:
        sid = new_space(c)
        t = in_background(server, alice, sid, ops(
            {"type": "shell", "command": "sleep 1.5"},
            {"type": "createFile", "path": XSS_NAME, "content": XSS_FILE},
            {"type": "createFile", "path": "app.py", "content": "def f():\n    return '<b>'  # done\n"},
            {"type": "shell", "command": f"printf '%s\\n' '{XSS_OUT}' >&2; exit 3"}))
        rid = first_run(c, sid)
        response = w.page.goto(f"/console/runs/{rid}")
        assert response is not None
        csp = response.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "style-src 'self'" in csp and "unsafe-inline" not in csp
        w.page.wait_for_selector("body[data-run-ended=completed]", timeout=WAIT_MS)
        t.join(60)
        assert w.page.locator("li.ev-shell.failed pre.stderr").text_content() == XSS_OUT
        assert w.page.locator("li.ev-createFile .ev-body").first.text_content() == XSS_NAME
        assert "+<script>window.__xss=2;alert(2)</script>" in w.page.locator("li.ev-createFile pre.diff").first.text_content()
        assert w.page.evaluate("window.__xss === undefined")
        # The diff of a Python file is coloured (keyword, string, comment), its text unchanged.
        py = w.page.locator("li.ev-createFile pre.diff[data-lang=python]")
        assert py.text_content() == "+def f():\n+    return '<b>'  # done\n"
        assert [py.locator(f"span.{k}").first.text_content() for k in ("tok-kw", "tok-str", "tok-com")] == [
            "def", "'<b>'", "# done"]
        w.assert_clean()


def test_deny_with_a_reason_reaches_the_agent(browser: Any, server: ServerProcess, alice: str) -> None:
    w = login(browser, server.url, alice)
    with api(server, alice) as c:
        sid = new_space(c)
        rid = paused_run(c, sid, {"type": "shell", "id": "wipe", "command": "rm -rf src"},
                         {"type": "message", "content": "next"})
        w.page.goto("/")
        card = w.page.locator(f".pending:has(a[href='/console/runs/{rid}'])")
        card.locator("input[name=reason]").fill("keep the sources")
        card.locator("button.deny").click()
        w.page.wait_for_selector("body[data-decided]", timeout=WAIT_MS)
        assert "denied by you" in card.locator("output").text_content()
        events = c.get(f"/v1/runs/{rid}").json()["events"]
        denied = [e for e in events if e["type"] == "policyDenied"]
        assert [d["reason"] for d in denied] == ["denied by the user: keep the sources"]
        assert c.get(f"/v1/runs/{rid}").json()["state"] == "completed"
        w.assert_clean()


def test_two_browsers_approving_at_once_run_it_once_and_one_is_told_already_decided(
        browser: Any, server: ServerProcess, alice: str) -> None:
    # In a zone 5:45 from UTC: who answered first is shown with the time in the viewer's zone.
    a, b = (login(browser, server.url, alice, timezone_id="Asia/Kathmandu") for _ in range(2))
    with api(server, alice) as c:
        sid = new_space(c)
        rid = paused_run(c, sid, {"type": "shell", "id": "once", "command": "rm -rf tmp; echo ran >> log"})
        for w in (a, b):
            w.page.goto(f"/console/runs/{rid}")
        a.page.click(".pending button.approve", no_wait_after=True)
        b.page.click(".pending button.approve", no_wait_after=True)
        for w in (a, b):
            w.page.wait_for_selector("body[data-decided]", timeout=WAIT_MS)
        said = sorted(w.page.locator(".pending output").text_content() or "" for w in (a, b))
        assert said[0].startswith("approved by you"), said
        assert "was already approved by API key" in said[1] and " at " in said[1], said
        assert sorted(w.page.evaluate("document.body.dataset.decided") for w in (a, b)) == ["200", "409"]
        assert c.get(f"/v1/spaces/{sid}/files/log").content == b"ran\n"
        loser = a if a.page.evaluate("document.body.dataset.decided") == "409" else b
        at = float(loser.page.locator(".pending output").get_attribute("data-at") or "nan")
        local = datetime.fromtimestamp(at, ZoneInfo("Asia/Kathmandu"))
        assert "UTC" not in said[1] and f"{local.minute:02d}:{local.second:02d}" in said[1], said
        assert datetime.fromtimestamp(at, UTC).strftime("%H:%M:%S") not in said[1], said
        loser.screenshot("already-decided")
        for w in (a, b):
            w.assert_clean()


def test_a_post_without_the_csrf_token_or_from_another_origin_is_refused(
        browser: Any, server: ServerProcess, alice: str) -> None:
    w = login(browser, server.url, alice)
    with api(server, alice) as c:
        sid = new_space(c)
        rid = paused_run(c, sid, {"type": "shell", "id": "x", "command": "rm -rf out"})
        w.page.goto(f"/console/runs/{rid}")
        csrf = w.page.locator(".pending input[name=csrf]").get_attribute("value")
        url = f"{server.url}/console/runs/{rid}/decide"
        form = {"operationId": "x", "decision": "approved"}
        no_token = w.context.request.post(url, form=form, headers={"Origin": server.url})
        assert no_token.status == 403 and "CSRF" in no_token.text()
        wrong_origin = w.context.request.post(url, form={**form, "csrf": csrf}, headers={"Origin": "http://evil.example"})
        assert wrong_origin.status == 403 and "Origin" in wrong_origin.text()
        assert c.get(f"/v1/runs/{rid}").json()["state"] == "awaiting_approval"  # nothing decided
        # The same form with its token, from the page's origin, is accepted.
        ok = w.context.request.post(url, form={**form, "csrf": csrf}, headers={"Origin": server.url})
        assert ok.status == 200, ok.text()
        assert c.get(f"/v1/runs/{rid}").json()["state"] == "completed"


def test_another_tenants_run_is_404_and_their_spaces_are_not_listed(
        browser: Any, server: ServerProcess, alice: str, bob: str) -> None:
    with api(server, alice) as c:
        sid = new_space(c)
        rid = paused_run(c, sid, {"type": "shell", "id": "x", "command": "rm -rf secret-dir"})
    w = login(browser, server.url, bob)
    response = w.page.goto(f"/console/runs/{rid}")
    assert response is not None and response.status == 404
    assert "rm -rf secret-dir" not in w.page.content()
    w.page.goto("/")
    assert sid not in w.page.content() and rid not in w.page.content()
    events = w.context.request.get(f"{server.url}/console/runs/{rid}/events")
    assert events.status == 404


def test_login_logout_wrong_keys_and_the_cookie(browser: Any, server: ServerProcess, alice: str) -> None:
    w = new_page(browser, base_url=server.url)
    w.page.goto("/console/login")
    w.page.fill("#key", "cls_wrong")
    w.page.click("form.login button")
    assert w.page.locator("p.error").text_content() == "unknown API key"
    w.page.fill("#key", alice)
    w.page.click("form.login button")
    w.page.wait_for_url(f"{server.url}/")
    cookie = next(k for k in w.context.cookies() if k["name"] == "codeloop_console")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and alice not in cookie["value"]
    assert w.page.evaluate("document.cookie") == ""  # not readable by page scripts
    w.page.set_viewport_size({"width": 390, "height": 844})  # phone width: nothing wider than the screen
    assert w.page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    w.screenshot("runs-phone-width", full_page=False)
    w.page.click("nav button")
    w.page.wait_for_url(f"{server.url}/console/login")
    w.page.goto("/")
    assert w.page.url.endswith("/console/login")  # the session is gone
    w.assert_clean()


def test_keyboard_a_approves_the_first_pending_call(browser: Any, server: ServerProcess, alice: str) -> None:
    w = login(browser, server.url, alice)
    with api(server, alice) as c:
        sid = new_space(c)
        rid = paused_run(c, sid, {"type": "shell", "id": "k", "command": "rm -rf cache; echo k >> log"})
        w.page.goto(f"/console/runs/{rid}")
        w.page.keyboard.press("a")
        w.page.wait_for_selector("body[data-decided='200']", timeout=WAIT_MS)
        assert c.get(f"/v1/spaces/{sid}/files/log").content == b"k\n"


def test_rate_limit_on_wrong_keys(server: ServerProcess, alice: str) -> None:
    # From another loopback address (127.0.0.2): the limit is per address, and would otherwise
    # block the logins of this module's other tests (127.0.0.1) for a minute.
    statuses = []
    transport = httpx.HTTPTransport(local_address="127.0.0.2")
    with httpx.Client(base_url=server.url, headers={"Origin": server.url}, transport=transport) as c:
        for _ in range(7):
            statuses.append(c.post("/console/login", data={"key": "cls_guess"}).status_code)
        blocked = c.post("/console/login", data={"key": alice})  # even the right key, until the window passed
    assert statuses == [401] * 5 + [429, 429]
    assert blocked.status_code == 429 and "too many wrong keys" in blocked.text
    with httpx.Client(base_url=server.url, headers={"Origin": server.url}) as other:  # another address
        assert other.post("/console/login", data={"key": alice}).status_code == 303


def test_a_protected_paths_content_is_never_in_the_page(server: ServerProcess, alice: str) -> None:
    with api(server, alice) as c:
        sid = new_space(c)
        out = c.post(f"/v1/spaces/{sid}/runs", json=ops(
            {"type": "createFile", "path": ".env", "content": "API_TOKEN=hunter2-secret\n"},
            {"type": "createFile", "path": "keys/deploy.pem", "content": "-----BEGIN hunter2-key\n"},
            {"type": "createFile", "path": "notes.txt", "content": "visible text\n"})).json()
    with httpx.Client(base_url=server.url, headers={"Origin": server.url}) as page:
        assert page.post("/console/login", data={"key": alice}).status_code == 303
        html = page.get(f"/console/runs/{out['runId']}").text
    assert "hunter2" not in html
    assert "content of .env not shown" in html and "content of keys/deploy.pem not shown" in html
    assert "+visible text" in html


def test_a_run_of_10000_output_lines_streams_with_a_bounded_number_of_nodes(
        browser: Any, server: ServerProcess, alice: str) -> None:
    """10,000 lines of one command plus 400 events, streamed live: the page keeps the newest 300
    events and the last 200 lines of an output; the rest is behind "show all". The longest
    main-thread task is printed (a figure; benchmarks/console_latency.py measures it too)."""
    w = login(browser, server.url, alice)
    w.context.add_init_script("""
      window.__longest = 0;
      new PerformanceObserver((l) => { for (const e of l.getEntries())
        window.__longest = Math.max(window.__longest, e.duration); }).observe({type: "longtask", buffered: true});
    """)
    with api(server, alice) as c:
        sid = new_space(c)
        t = in_background(server, alice, sid, ops(
            {"type": "shell", "command": "sleep 1.5"},
            *({"type": "message", "content": f"m{i}"} for i in range(400)),
            {"type": "shell", "command": "seq 1 10000"}))
        rid = first_run(c, sid)
        w.page.goto(f"/console/runs/{rid}")
        w.page.wait_for_selector("body[data-run-ended=completed]", timeout=WAIT_MS)
        t.join(60)
        total = len(c.get(f"/v1/runs/{rid}").json()["events"])
    assert total == 402
    assert w.page.locator("#events > li").count() == 300
    assert w.page.locator("#events-more").text_content() == "102 earlier events hidden: show all"
    last = w.page.locator("#events > li").last
    assert last.locator("pre.stdout").text_content() == "\n".join(str(i) for i in range(9801, 10001))
    assert last.locator("a.show-all").text_content() == "9800 earlier lines hidden: show all"
    w.page.click("#events-more")
    w.page.wait_for_url("**?all=1")
    assert w.page.locator("#events > li").count() == 402
    out = w.page.locator("li.ev-shell pre.stdout").text_content() or ""
    assert out.startswith("1\n2\n") and out.endswith("\n10000")  # all of it here
    w.page.go_back()
    w.page.reload()
    assert w.page.locator("#events > li").count() == 300  # the server keeps the bound on a reload
    print(f"longest main-thread task while streaming: {w.page.evaluate('window.__longest')} ms")
    w.assert_clean()


def test_no_auth_on_a_network_address_needs_its_flag_and_the_console_still_wants_csrf(tmp_path: Path) -> None:
    import subprocess
    import sys
    refused = subprocess.run([sys.executable, "-m", "codeloop.cli.main", "spaces", "serve", "--no-auth", "--host",
                              "0.0.0.0", "--data-dir", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and "add --no-auth-on-network" in refused.stderr
    srv = ServerProcess(tmp_path, "--no-auth", "--host", "0.0.0.0", "--no-auth-on-network").start()
    try:
        with httpx.Client(base_url=srv.url, headers={"Origin": srv.url}, timeout=60) as c:
            sid = new_space(c)
            rid = paused_run(c, sid, {"type": "shell", "id": "x", "command": "rm -rf out"})
            page = c.get(f"/console/runs/{rid}")  # no login without keys
            assert page.status_code == 200 and "rm -rf out" in page.text
            refused_post = c.post(f"/console/runs/{rid}/decide", data={"operationId": "x", "decision": "approved"})
            assert refused_post.status_code == 403
            assert c.get(f"/v1/runs/{rid}").json()["state"] == "awaiting_approval"
    finally:
        srv.stop()
    assert "WARNING: --no-auth on 0.0.0.0, a network address" in srv.stderr


def test_with_javascript_off_the_pages_read_and_the_plain_form_answers(
        browser: Any, server: ServerProcess, alice: str) -> None:
    w = login(browser, server.url, alice, java_script_enabled=False)
    with api(server, alice) as c:
        sid = new_space(c)
        rid = paused_run(c, sid, {"type": "shell", "command": "echo hello-no-js"},
                         {"type": "shell", "id": "w", "command": "rm -rf dist"})
        w.page.goto(f"/console/runs/{rid}")
        assert w.page.locator("li.ev-shell pre.stdout").text_content() == "hello-no-js\n".rstrip("\n")
        assert " UTC" in (w.page.locator("li.ev-shell time").text_content() or "")  # no script: shown in UTC
        w.page.fill(".pending input[name=reason]", "not today")
        w.page.click(".pending button.deny")
        w.page.wait_for_selector("p.notice")
        assert w.page.locator("p.notice").text_content() == "denied by you; the run is now completed"
        assert [e["type"] for e in c.get(f"/v1/runs/{rid}").json()["events"]][-1] == "policyDenied"
