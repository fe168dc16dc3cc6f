"""File names in a text (issue 10): the tokens that look like a file name, by their form alone.

What is left of the claim checks once issue 33 removed them (they read the model's prose,
"I have created result.txt", to decide what to tell it): :func:`file_names`, which
:mod:`codeloop.agent.task_context` uses to find the files a task names (a name, never a verb).
"""

from __future__ import annotations

import re
from collections.abc import Callable

FILE_EXTENSIONS = frozenset("""
py pyi js mjs cjs ts tsx jsx json jsonl txt md rst toml yaml yml cfg ini conf env csv tsv
html htm css scss sh bash zsh go rs java kt c h cc cpp hpp cs rb php swift sql xml lock log
gradle mk makefile dockerfile tf lua pl r ipynb
""".split())
"""Extensions taken as file names even when the file does not exist (yet)."""

_NAME = re.compile(r"(?<![\w/.-])`?((?:\.{0,2}/)?[A-Za-z_][\w.-]*(?:/[\w.-]+)*\.[A-Za-z][A-Za-z0-9]{0,9})`?(?![\w/-])")
_NOT_FILES = frozenset({"e.g", "i.e", "etc", "vs"})


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

