"""The console's HTML: every value goes through :func:`esc`, and no page holds inline script or style.

Pages are built from small functions over escaped text rather than a template engine: the
console has six pages, and one escaping function at every insertion point is easy to audit
(``tests/spaces/console`` puts ``<script>`` and ``<img onerror>`` in file names, files and
command output and checks they show as text). The structure an event gets here is the one
``static/console.js`` builds for events that arrive live, with ``textContent`` only.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from html import escape
from typing import Any

OUTPUT_TAIL_LINES = 200
"""Lines of one command's output shown before "show all"."""
EVENTS_SHOWN = 300
"""Events of a run shown before "show all" (older ones are behind it)."""
APP_TITLE = "codeloop console"


def esc(value: object) -> str:
    return escape("" if value is None else str(value), quote=True)


def iso(ts: float | None) -> str:
    if ts is None:
        return ""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def when(value: str | float | None) -> str:
    """A ``<time>`` the page script shows in the viewer's zone (UTC without JavaScript)."""
    text = iso(value) if isinstance(value, int | float) else (value or "")
    return f'<time datetime="{esc(text)}">{esc(text.replace("T", " ").replace("Z", " UTC"))}</time>'


def layout(title: str, body: str, *, pending: int = 0, csrf: str | None = None, logged_in: bool = True) -> str:
    count = f"({pending}) " if pending else ""
    nav = ""
    if logged_in:
        nav = ('<nav><a href="/">Spaces and runs</a>'
               f'<span class="pending-count" id="pending-count" data-count="{pending}">{pending} pending</span>'
               f'<form method="post" action="/console/logout" class="inline"><input type="hidden" name="csrf" '
               f'value="{esc(csrf)}"><button type="submit">Log out</button></form></nav>')
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title data-base=\"{esc(title)} · {APP_TITLE}\">{count}{esc(title)} · {APP_TITLE}</title>"
            "<link rel=\"stylesheet\" href=\"/console/static/console.css\">"
            "<script type=\"module\" src=\"/console/static/console.js\"></script></head>"
            f"<body><header><h1>{APP_TITLE}</h1>{nav}</header><main>{body}</main></body></html>")


def login_page(error: str = "") -> str:
    problem = f'<p class="error" role="alert">{esc(error)}</p>' if error else ""
    body = (f"<h2>Log in</h2>{problem}"
            '<form method="post" action="/console/login" class="login">'
            '<label for="key">API key</label>'
            '<input id="key" name="key" type="password" autocomplete="current-password" required autofocus>'
            '<button type="submit">Log in</button></form>'
            "<p class=\"hint\">The same keys as the HTTP API (<code>codeloop spaces keys create</code>; "
            "<code>codeloop console</code> prints where its key is).</p>")
    return layout("Log in", body, logged_in=False)


def pending_card(*, action: str, csrf: str, command: str, paths: Sequence[str] | None, rule: str | None,
                 reason: str, session: str, asked_at: float | str | None, fields: Mapping[str, str],
                 session_href: str | None = None) -> str:
    """One pending approval: what runs, why it asks, Approve / Deny with an optional reason."""
    hidden = "".join(f'<input type="hidden" name="{esc(k)}" value="{esc(v)}">' for k, v in fields.items())
    path_list = ("<dd><ul class=\"paths\">" + "".join(f"<li><code>{esc(p)}</code></li>" for p in paths)
                 + "</ul></dd>") if paths else "<dd>(not known: it may touch any file)</dd>"
    sess = f'<a href="{esc(session_href)}">{esc(session)}</a>' if session_href else esc(session)
    return ('<section class="pending" data-pending>'
            f'<pre class="command">{esc(command)}</pre>'
            f"<dl><dt>Paths</dt>{path_list}<dt>Rule</dt><dd><code>{esc(rule or '(none)')}</code></dd>"
            f"<dt>Why</dt><dd>{esc(reason)}</dd><dt>Session</dt><dd>{sess}</dd>"
            f"<dt>Asked</dt><dd>{when(asked_at)}</dd></dl>"
            f'<form method="post" action="{esc(action)}" class="decide">'
            f'<input type="hidden" name="csrf" value="{esc(csrf)}">{hidden}'
            '<label>Reason (optional) <input name="reason" maxlength="500"></label>'
            '<button type="submit" name="decision" value="approved" class="approve" accesskey="a">Approve</button>'
            '<button type="submit" name="decision" value="denied" class="deny" accesskey="d">Deny</button>'
            '<output class="result" aria-live="polite"></output></form></section>')


def _lines_block(text: str, cls: str, show_all: bool, more_href: str) -> str:
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    hidden = 0 if show_all else max(0, len(lines) - OUTPUT_TAIL_LINES)
    shown = "\n".join(lines[hidden:])
    more = (f'<a class="show-all" href="{esc(more_href)}">{hidden} earlier lines hidden: show all</a>'
            if hidden else "")
    return f'{more}<pre class="{cls}">{esc(shown)}</pre>'


def diff_block(diff: Mapping[str, Any] | None) -> str:
    """A file change as lines marked added/removed (classes colour them), or why it is hidden."""
    if not diff:
        return ""
    if diff.get("hidden"):
        return f'<p class="hidden-content">{esc(diff["hidden"])}</p>'
    rows = "".join(f'<span class="{"add" if sign == "+" else "del"}">{esc(sign + line)}</span>\n'
                   for sign, line in diff.get("lines", []))
    return f'<pre class="diff" data-lang="{esc(diff.get("lang", ""))}">{rows}</pre>'


def event_summary(event: Mapping[str, Any]) -> str:
    kind = event.get("type")
    for key in ("command", "path", "content", "message", "reason"):
        value = event.get(key)
        if isinstance(value, str) and not (kind == "readFile" and key == "content"):
            return value
    return ""


def event_item(seq: int, event: Mapping[str, Any], diff: Mapping[str, Any] | None, *, show_all: bool,
               more_href: str) -> str:
    kind = str(event.get("type", "event"))
    ok = event.get("success")
    state = "" if ok is None else (" ok" if ok else " failed")
    parts = [f'<li class="ev ev-{esc(kind)}{state}" id="ev-{seq}" data-seq="{seq}">',
             f'<div class="ev-head"><span class="ev-type">{esc(kind)}</span> '
             f'<span class="ev-op">{esc(event.get("operationId") or "")}</span> '
             f'{when(event.get("timestamp"))}</div>',
             f'<div class="ev-body">{esc(event_summary(event))}</div>']
    for key in ("stdout", "stderr", "error"):
        value = event.get(key)
        if isinstance(value, str) and value:
            parts.append(_lines_block(value, f"out {key}", show_all, more_href))
    if kind == "approvalRequired":
        details = event.get("details") or {}
        parts.append(f'<div class="ev-body">rule: <code>{esc(details.get("policy") or "")}</code></div>')
    parts.append(diff_block(diff))
    parts.append("</li>")
    return "".join(parts)


def events_list(events: Sequence[tuple[int, Mapping[str, Any]]], diffs: Mapping[int, Mapping[str, Any]], *,
                show_all: bool, all_href: str) -> str:
    hidden = 0 if show_all else max(0, len(events) - EVENTS_SHOWN)
    more = (f'<p><a class="show-all" id="events-more" href="{esc(all_href)}">{hidden} earlier events hidden: '
            "show all</a></p>" if hidden else "")
    items = "".join(event_item(seq, ev, diffs.get(seq), show_all=show_all, more_href=all_href)
                    for seq, ev in events[hidden:])
    return f'{more}<ol class="events" id="events">{items}</ol>'


def table(headers: Iterable[str], rows: Iterable[Iterable[str]], empty: str) -> str:
    """A table whose cells are already HTML (each built with :func:`esc`)."""
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    if not body:
        return f'<p class="empty">{esc(empty)}</p>'
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    return f'<div class="table"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def link(href: str, text: str) -> str:
    return f'<a href="{esc(href)}">{esc(text)}</a>'


def data_block(element_id: str, value: Any) -> str:
    """JSON for the page script: a data block is never executed, and ``<`` is escaped inside it."""
    text = json.dumps(value, ensure_ascii=True).replace("<", "\\u003c").replace(">", "\\u003e")
    text = text.replace("&", "\\u0026")
    return f'<script type="application/json" id="{esc(element_id)}">{text}</script>'
