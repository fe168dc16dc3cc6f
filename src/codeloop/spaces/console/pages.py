"""The console's HTML: Jinja2 templates (``templates/``) with autoescaping on, and no page holds
inline script or style.

Every value a template prints is escaped as text: :data:`ENV` autoescapes every ``.html``
template, and no template marks model, command, file or user content ``|safe``
(``tests/spaces/test_console_browser.py`` puts ``<script>`` and ``<img onerror>`` in file
names, files and command output and checks they show as text). The one JSON block a page
carries for its script goes through Jinja's ``tojson``, which escapes ``<``, ``>``, ``&`` and
``'`` inside it. The structure an event gets in ``templates/macros.html`` is the one
``static/console.js`` builds for events that arrive live, with ``textContent`` only.

The environment is built once, at import: templates are compiled on first use and cached.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from jinja2.ext import Extension

from codeloop.spaces.operations import READ_FILE

OUTPUT_TAIL_LINES = 200
"""Lines of one command's output shown before "show all"."""
EVENTS_SHOWN = 300
"""Events of a run shown before "show all" (older ones are behind it)."""
APP_TITLE = "codeloop console"


@dataclass(frozen=True)
class PendingCard:
    """One pending approval as a page shows it: what runs, why it asks, where to answer."""

    action: str
    """Where the Approve / Deny form posts."""
    csrf: str
    """The session's CSRF token, sent back with the form."""
    command: str
    """The exact command or call, as it will run."""
    paths: Sequence[str] | None
    """The paths it names; None when its tool cannot say."""
    rule: str | None
    """The policy rule that asked."""
    reason: str
    """Why it asks."""
    session: str
    """The run or session it belongs to."""
    asked_at: float | str | None
    """When it was asked (epoch seconds or ISO time)."""
    fields: Mapping[str, str]
    """Hidden form fields the answer needs (the operation's id)."""
    session_href: str | None = None
    """The page of its run or session, when there is one."""


class _OneLine(Extension):
    """Drops each line break of a template's source with the indentation after it.

    Templates are written one element a line so they read well; the pages are served as
    before, without whitespace text between tags (inside ``<pre>`` it would show). Only the
    template's own text is changed, never a value it prints; a newline the page needs is
    written ``{{ "\\n" }}``."""

    def preprocess(self, source: str, name: str | None, filename: str | None = None) -> str:
        return re.sub(r"\n[ \t]*", "", source)


def time_text(value: object) -> str:
    """An ISO time in UTC: epoch seconds are converted, a string is kept, anything else is ``""``."""
    if isinstance(value, int | float):
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(value))
    return value if isinstance(value, str) else ""


def tail(text: str, show_all: bool) -> tuple[int, str]:
    """How many lines of ``text`` are hidden before "show all", and the lines shown."""
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    hidden = 0 if show_all else max(0, len(lines) - OUTPUT_TAIL_LINES)
    return hidden, "\n".join(lines[hidden:])


def event_summary(event: Mapping[str, Any]) -> str:
    """The one line an event is known by (its command, path, message...)."""
    kind = event.get("type")
    for key in ("command", "path", "content", "message", "reason"):
        value = event.get(key)
        if isinstance(value, str) and not (kind == READ_FILE and key == "content"):
            return value
    return ""


def _pretty_json(value: Any) -> str:
    # A plain string: autoescaping makes it text (``tojson`` is for script data blocks).
    return json.dumps(value, indent=1, ensure_ascii=False)


ENV = Environment(
    loader=PackageLoader("codeloop.spaces.console", "templates"),
    autoescape=select_autoescape(enabled_extensions=("html",), default_for_string=True, default=True),
    undefined=StrictUndefined,
    extensions=[_OneLine],
    # None prints as nothing, as a missing value did before the templates.
    finalize=lambda value: "" if value is None else value,
)
ENV.globals.update(app_title=APP_TITLE, events_shown=EVENTS_SHOWN, tail=tail, summary=event_summary)
ENV.filters.update(time_text=time_text, pretty_json=_pretty_json)
# ``tojson`` without sorting keeps the data block's keys in the order the page script reads them.
ENV.policies["json.dumps_kwargs"] = {"ensure_ascii": True}


def render(template: str, **context: Any) -> str:
    """The page ``templates/<template>`` with ``context``, every printed value escaped."""
    return ENV.get_template(template).render(**context)
