"""The console's Jinja2 templates (issue 37) print every value as text: rendered directly with
XSS payloads in each place a page shows model, command, file or user content. The browser tests
(test_console_browser.py) check the same through a real server and Chromium."""

from __future__ import annotations

from importlib import resources
from types import SimpleNamespace

import pytest

from codeloop.spaces.console.pages import ENV, PendingCard, render

PAYLOAD = '<img src=x onerror="alert(1)"><script>alert(2)</script>'
ESCAPED = "&lt;img src=x onerror=&#34;alert(1)&#34;&gt;&lt;script&gt;alert(2)&lt;/script&gt;"
BASE = {"pending": 1, "csrf": PAYLOAD, "logged_in": True}


def card() -> PendingCard:
    return PendingCard(action="/console/runs/r/decide", csrf=PAYLOAD, command=PAYLOAD, paths=[PAYLOAD], rule=PAYLOAD,
                       reason=PAYLOAD, session=PAYLOAD, asked_at=PAYLOAD, fields={"operationId": PAYLOAD},
                       session_href="/console/runs/r")


def pages() -> dict[str, str]:
    run = SimpleNamespace(id=PAYLOAD, state=PAYLOAD, created_at=0.0, pending_operation=PAYLOAD)
    space = SimpleNamespace(id=PAYLOAD, name=PAYLOAD, expires_at=0.0)
    event = {"type": PAYLOAD, "operationId": PAYLOAD, "command": PAYLOAD, "stdout": PAYLOAD, "stderr": PAYLOAD,
             "success": False, "timestamp": PAYLOAD}
    diff = {"lang": PAYLOAD, "lines": [("+", PAYLOAD), ("-", PAYLOAD)]}
    hidden = {"hidden": PAYLOAD}
    info = SimpleNamespace(id=PAYLOAD, status=PAYLOAD, first_input=PAYLOAD, workspace=PAYLOAD, started=PAYLOAD)
    items = [{"kind": "call", "at": PAYLOAD, "tool": PAYLOAD, "arguments": {"command": PAYLOAD}},
             {"kind": "result", "at": PAYLOAD, "tool": PAYLOAD, "error": None, "output": PAYLOAD},
             {"kind": "checkpoint", "at": PAYLOAD, "tool": PAYLOAD, "step": PAYLOAD, "paths": [PAYLOAD]},
             {"kind": "input", "at": PAYLOAD, "text": PAYLOAD}]
    return {
        "login": render("login.html", title=PAYLOAD, error=PAYLOAD, pending=0, logged_in=False),
        "message": render("message.html", title=PAYLOAD, ok=False, message=PAYLOAD, back="/", **BASE),
        "index": render("index.html", title=PAYLOAD, cards=[card()], spaces=[(space, [run])], local_sessions=[info],
                        **BASE),
        "run": render("run.html", title=PAYLOAD, run=run, space=space, card=card(),
                      events=[(1, event), (2, {"type": "createFile", "path": PAYLOAD}), (3, {"type": "deleteFile"})],
                      diffs={2: diff, 3: hidden}, show_all=False, all_href="/x", data={"text": PAYLOAD}, **BASE),
        "session": render("session.html", title=PAYLOAD, session_id=PAYLOAD, items=items, show_all=False,
                          all_href="/x", **BASE),
    }


@pytest.mark.parametrize("name", ["login", "message", "index", "run", "session"])
def test_every_value_prints_as_text(name: str) -> None:
    html = pages()[name]
    assert "<img" not in html and "<script>" not in html and "onerror=\"" not in html
    assert ESCAPED in html


def test_the_pages_script_data_block_cannot_close_its_script_element() -> None:
    html = pages()["run"]
    block = html.split('<script type="application/json" id="run-data">', 1)[1].split("</script>", 1)[0]
    assert block == '{"text": "\\u003cimg src=x onerror=\\"alert(1)\\"\\u003e\\u003cscript\\u003ealert(2)' \
                    '\\u003c/script\\u003e"}'


def test_every_template_is_autoescaped_and_none_marks_content_safe() -> None:
    names = [p.name for p in resources.files("codeloop.spaces.console").joinpath("templates").iterdir()]
    assert {"base.html", "index.html", "run.html", "session.html", "login.html", "message.html"} <= set(names)
    for name in names:
        assert callable(ENV.autoescape) and ENV.autoescape(name) is True
        text = resources.files("codeloop.spaces.console").joinpath("templates", name).read_text()
        assert "|safe" not in text.replace(" ", "") and "autoescape false" not in text and "Markup" not in text
