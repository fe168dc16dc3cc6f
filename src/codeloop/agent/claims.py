"""Claims in a final answer that no tool call backs (issue 10, "stopping well").

Small models often end with "I have created result.txt" without ever calling a tool, or
paste "the corrected version" of a file in a code block instead of writing it. The user then
reads a success report for a workspace that did not change. The session checks the final
answer of each input once against what its tool calls did and, when a claim is unbacked,
tells the model so before it may stop (:meth:`codeloop.agent.Session` with
``SessionConfig.check_claims``).

Everything here is heuristic and errs on the side of silence: a claim counts only when it
names a file (a known extension, or a file that exists), and a file counts as changed when
any successful non-read-only call this input mentions its name.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

FILE_EXTENSIONS = frozenset("""
py pyi js mjs cjs ts tsx jsx json jsonl txt md rst toml yaml yml cfg ini conf env csv tsv
html htm css scss sh bash zsh go rs java kt c h cc cpp hpp cs rb php swift sql xml lock log
gradle mk makefile dockerfile tf lua pl r ipynb
""".split())
"""Extensions taken as file names even when the file does not exist (yet)."""

_CHANGE_VERBS = ("created|written|wrote|updated|modified|changed|edited|fixed|saved|added|replaced"
                 "|corrected|renamed|moved|deleted|removed|overwritten|rewritten|implemented|refactored")
_CLAIM = re.compile(
    rf"\b(?:I|we)(?:'ve|\s+have|\s+had)?\s+(?:now\s+|also\s+|successfully\s+|just\s+|already\s+|then\s+|finally\s+)*"
    rf"(?:{_CHANGE_VERBS})\b"
    rf"|\b(?:has|have)\s+(?:now\s+|also\s+)?been\s+(?:successfully\s+)?(?:{_CHANGE_VERBS})\b"
    rf"|\b(?:was|were|is\s+now|are\s+now)\s+(?:successfully\s+)?(?:\w+\s+and\s+)?(?:{_CHANGE_VERBS})\b"
    r"|\b(?:written|saved|stored|wrote|saves|writes)\s+(?:it\s+|them\s+)?(?:to|in|into|as)\b"
    r"|\bnow\s+(?:contains|has|holds|prints|returns|reads|includes|defines)\b",
    re.IGNORECASE,
)
_NAME = re.compile(r"(?<![\w/.-])`?((?:\.{0,2}/)?[A-Za-z_][\w.-]*(?:/[\w.-]+)*\.[A-Za-z][A-Za-z0-9]{0,9})`?(?![\w/-])")
_DELETED_NAME = re.compile(
    r"\b(?:deleted|removed)\s+(?:the\s+)?(?:file\s+)?[`\"']?(?P<a>[\w./-]+\.[A-Za-z][A-Za-z0-9]*)[`\"']?(?![\w/-])"
    r"|[`\"']?(?P<b>[\w./-]+\.[A-Za-z][A-Za-z0-9]*)[`\"']?\s+(?:file\s+)?(?:has\s+been|have\s+been|was|is\s+now)\s+"
    r"(?:successfully\s+)?(?:deleted|removed)\b",
    re.IGNORECASE,
)
_SHOWN = re.compile(
    r"\bhere(?:'s|\s+is|\s+are)\s+(?:the\s+|your\s+|an?\s+)?(?:corrected|updated|fixed|modified|new|changed|revised|"
    r"complete|final)\b"
    r"|\b(?:corrected|updated|fixed|modified|revised)\s+(?:version|code|file|content)\b",
    re.IGNORECASE,
)
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[^\n]*\n(.*?)^[ \t]*\1[ \t]*$", re.MULTILINE | re.DOTALL)
_SENTENCE_END = re.compile(r"(?<=[.!?:])\s+(?=[A-Z`*\-\d])|\n+")
_NOT_FILES = frozenset({"e.g", "i.e", "etc", "vs"})


@dataclass(frozen=True)
class Claim:
    """A sentence of the answer that says a file was changed."""

    sentence: str
    files: tuple[str, ...]
    """File names mentioned in the sentence."""
    deleted: tuple[str, ...] = ()
    """Files the sentence says were deleted (the file itself, not something in it)."""


@dataclass(frozen=True)
class Unbacked:
    """A file the answer says was changed, created, deleted or shown changed, and why that is not so."""

    file: str
    kind: str
    """``changed`` (no call changed it), ``deleted`` (it still exists) or ``shown`` (a
    changed version sits in a code block but was never written)."""


def file_names(text: str, exists: Callable[[str], bool] | None = None) -> list[str]:
    """File names in ``text``: tokens with a known extension, or that ``exists`` accepts."""
    names: list[str] = []
    for match in _NAME.finditer(text):
        name = match.group(1).rstrip(".")
        if name.lower() in _NOT_FILES or "." not in name:
            continue
        ext = name.rsplit(".", 1)[1].lower()
        if (ext in FILE_EXTENSIONS or (exists is not None and exists(name))) and name not in names:
            names.append(name)
    return names


def code_blocks(text: str) -> list[str]:
    """Bodies of fenced code blocks in ``text``."""
    return [m.group(2) for m in _FENCE.finditer(text)]


def _prose(text: str) -> str:
    """``text`` without its fenced code blocks (claims live in prose, not in code)."""
    return _FENCE.sub("\n", text)


def find_claims(text: str, exists: Callable[[str], bool] | None = None) -> list[Claim]:
    """Sentences outside code blocks that claim a change to at least one named file."""
    claims: list[Claim] = []
    for sentence in _SENTENCE_END.split(_prose(text)):
        sentence = sentence.strip()
        if not sentence or not _CLAIM.search(sentence):
            continue
        files = file_names(sentence, exists)
        if not files:
            continue
        deleted = tuple(dict.fromkeys(
            (m.group("a") or m.group("b")).rstrip(".") for m in _DELETED_NAME.finditer(sentence)))
        claims.append(Claim(sentence, tuple(files), tuple(d for d in deleted if d in files)))
    return claims


def shows_changed_version(text: str) -> bool:
    """True when the answer presents a code block as a changed version of something."""
    return bool(code_blocks(text)) and bool(_SHOWN.search(_prose(text)))


def _mentioned(name: str, touched: Iterable[str]) -> bool:
    base = posixpath.basename(name.lstrip("./")) or name
    return any(base in text for text in touched)


async def unbacked(
    text: str,
    touched: Iterable[str],
    exists: Callable[[str], Awaitable[bool]],
) -> list[Unbacked]:
    """Files ``text`` claims changed that no call backs.

    ``touched`` holds the arguments (as text) of this input's successful calls to tools that
    can change the workspace; ``exists`` says whether a path exists in the workspace now.
    """
    prose = _prose(text)
    if not _CLAIM.search(prose) and not shows_changed_version(text):
        return []  # most answers claim nothing: no file probes (a round trip each over SSH)
    touched = list(touched)
    present: dict[str, bool] = {}

    async def is_present(name: str) -> bool:
        if name not in present:
            try:
                present[name] = await exists(name)
            except Exception:  # a path the environment rejects (outside the workspace) counts as absent
                present[name] = False
        return present[name]

    # Names without a known extension count only when the file exists: collect candidates first.
    candidates = [m.group(1).rstrip(".") for m in _NAME.finditer(prose)]
    for name in candidates:
        await is_present(name)
    known = present.copy()

    found: dict[str, Unbacked] = {}  # the first finding per file
    for claim in find_claims(text, lambda n: known.get(n, False)):
        for name in claim.files:
            if name in found:
                continue
            if name in claim.deleted:
                if await is_present(name):
                    found[name] = Unbacked(name, "deleted")
            elif not _mentioned(name, touched):
                found[name] = Unbacked(name, "changed")
    if shows_changed_version(text):
        for name in file_names(prose, lambda n: known.get(n, False)):
            if name not in found and await is_present(name) and not _mentioned(name, touched):
                found[name] = Unbacked(name, "shown")
    return list(found.values())


_NOTES = {
    "deleted": "- You said `{}` was deleted, but it still exists.",
    "shown": "- You showed a changed version of `{}`, but the file was not written; it is unchanged.",
    "changed": "- You said you changed `{}`, but no tool call in this task wrote it.",
}


def claim_note(found: list[Unbacked]) -> str:
    """The message that sends the model back to work, one line per unbacked file."""
    lines = ["Before you finish: your answer describes changes that did not happen in the workspace."]
    lines += [_NOTES.get(item.kind, _NOTES["changed"]).format(item.file) for item in found]
    lines.append("Only tool calls change files. Make the change now with a tool call (write_file or "
                 "edit_file; shell to delete), then give your final answer. If you cannot, say what is not done.")
    return "\n".join(lines)
