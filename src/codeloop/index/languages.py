"""Which language a file is in, and its tree-sitter parser (grammar wheels, no downloads).

Grammars come from the ``tree_sitter_<lang>`` wheels installed with ``codeloop[index]``;
a missing wheel makes that language plain text (searchable, no symbols), never an error.
"""

from __future__ import annotations

import importlib
from functools import cache
from typing import Any

from tree_sitter import Language, Parser, Tree

EXTENSIONS: dict[str, str] = {
    ".py": "python", ".pyi": "python",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".c": "c", ".h": "c",
    ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".hh": "cpp", ".hxx": "cpp",
    ".sh": "bash", ".bash": "bash",
}
"""File extension → language name."""

DOC_EXTENSIONS = frozenset({".md", ".markdown", ".mdx", ".rst", ".txt", ".adoc"})
"""Documents: split into sections at headings, which become the snippets' anchors."""
_NAMED_DOCUMENTS = frozenset({"README", "LICENSE", "CHANGELOG", "NOTICE", "AUTHORS", "CONTRIBUTING"})

GRAMMARS: dict[str, tuple[str, str]] = {
    "python": ("tree_sitter_python", "language"),
    "javascript": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "go": ("tree_sitter_go", "language"),
    "rust": ("tree_sitter_rust", "language"),
    "java": ("tree_sitter_java", "language"),
    "c": ("tree_sitter_c", "language"),
    "cpp": ("tree_sitter_cpp", "language"),
    "bash": ("tree_sitter_bash", "language"),
}
"""Language → the module of its grammar wheel and the function there returning its grammar."""


def _extension(path: str) -> str:
    """The file name's extension, lower-cased (empty when it has none)."""
    dot = path.rfind(".")
    return "" if dot == -1 or "/" in path[dot:] else path[dot:].lower()


def language_for(path: str) -> str | None:
    """The language of ``path`` by extension (``None`` for documents and unknown files)."""
    return EXTENSIONS.get(_extension(path))


def is_document(path: str) -> bool:
    """True for Markdown/text documents (``README`` without extension included)."""
    if extension := _extension(path):
        return extension in DOC_EXTENSIONS
    return path.rsplit("/", 1)[-1].upper() in _NAMED_DOCUMENTS


@cache
def grammar(language: str) -> Language | None:
    """The tree-sitter ``Language`` of ``language``, or ``None`` when its wheel is absent."""
    spec = GRAMMARS.get(language)
    if spec is None:
        return None
    try:
        module: Any = importlib.import_module(spec[0])
    except ImportError:
        return None
    return Language(getattr(module, spec[1])())


_BASH_SAFE = bytes(range(128)) + b"x" * 128
"""Bytes over 0x7f read as ``x`` (same offsets, rows and columns)."""


def parse(ts_parser: Parser, language: str, data: bytes) -> Tree:
    """``data`` parsed as ``language``. Bash files are parsed with their non-ASCII bytes as ``x``:
    tree-sitter-bash's scanner passes the character after ``{`` to isdigit(), which reads out of
    bounds for code points over 255 and can crash the process. A non-ASCII name then shows x's."""
    return ts_parser.parse(data.translate(_BASH_SAFE) if language == "bash" else data)


@cache
def parser(language: str) -> Parser | None:
    """A reusable parser for ``language`` (parsers are not thread-safe: one thread per index)."""
    lang = grammar(language)
    return Parser(lang) if lang is not None else None

