"""The files a task names, put in front of a small model (issue 20, "context up front").

A small model rarely decides to read the file it was told to fix; aider puts the files "in
the chat" for the same reason. :func:`gather_task_context` finds the workspace files a task
names (a path, a file name, or a Python ``module.function`` that resolves), then, within
the budget, the test files that import them and the files they import (the code index's
import resolution), and renders them as read_file shows them. The rest of the workspace is
a short map (the index's tree with each file's top-level definitions) when it fits.

Everything goes through the :class:`ExecutionEnvironment` (a listing and file reads), so it
works the same in local, sandboxed and SSH workspaces. Nothing here runs a program.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

from codeloop.agent.claims import FILE_EXTENSIONS, file_names
from codeloop.environments.base import ExecutionEnvironment
from codeloop.environments.errors import WorkspaceError
from codeloop.index.builder import parse_file
from codeloop.index.code_index import file_tree
from codeloop.index.import_resolution import ImportResolver
from codeloop.index.languages import language_for
from codeloop.tools import workspace_ops as ops
from codeloop.tools.files import number_lines

MAX_LISTED = 5_000
"""A workspace with more files than this gets no map (and names resolve by exact path only)."""
MAX_MAP_FILES = 150
"""Files whose definitions the map may list (more: the map is the tree alone, if it fits)."""
MAX_TESTS_PARSED = 40
"""Test files looked at for imports of the named files."""
MAX_FILE_BYTES = 200_000
"""Larger files are neither shown nor parsed."""
MAX_NAMES_PER_FILE = 8
"""Definitions listed per file in the map."""
FILES_HEADER = "# Files of the task (already read for you, numbered as read_file shows them)"
MAP_HEADER = "# Other files of the workspace (top-level definitions after the colon)"
TASK_HEADER = "# Task"

_DOTTED = re.compile(r"(?<![\w./-])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?![\w/-])")
_TEST_FILE = re.compile(r"(^|/)(tests?/|test_[^/]*$|[^/]*_test\.\w+$|[^/]*\.(test|spec)\.\w+$)")


@dataclass(frozen=True)
class FileShown:
    """One file put in front of the model."""

    path: str
    digest: str
    """Fingerprint of the bytes shown."""
    last: int
    """Last line shown (from line 1)."""
    whole: bool
    """Every line was shown."""


@dataclass(frozen=True)
class TaskContext:
    """What goes in front of the task: the text and the files it shows."""

    text: str
    files: tuple[FileShown, ...]


@dataclass
class _File:
    path: str
    data: bytes
    why: str = ""

    @property
    def lines(self) -> list[str]:
        text = self.data.decode("utf-8", "replace")
        lines = text.split("\n")
        return lines[:-1] if lines and lines[-1] == "" else lines


async def _listing(env: ExecutionEnvironment) -> list[str]:
    try:
        return sorted(await env.glob("**/*"))
    except (WorkspaceError, OSError):
        return []


async def _read(env: ExecutionEnvironment, path: str) -> bytes | None:
    try:
        data = await ops.read_bytes(env, path, max_bytes=MAX_FILE_BYTES)
    except (WorkspaceError, OSError):
        return None
    return None if b"\0" in data[:8192] else data


def _by_name(files: list[str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in files:
        found.setdefault(posixpath.basename(path), []).append(path)
    return found


def _resolve_file(name: str, files: set[str], by_name: dict[str, list[str]], root: str) -> str | None:
    """The workspace file ``name`` means: its path, or the one file of that name (the
    shallowest when several end with it)."""
    name = name.strip("`'\"")
    if name.startswith(root.rstrip("/") + "/"):
        name = name[len(root.rstrip("/")) + 1:]
    name = posixpath.normpath(name.removeprefix("./"))
    if name in files:
        return name
    matches = [p for p in by_name.get(posixpath.basename(name), []) if p.endswith("/" + name)]
    return min(matches, key=lambda p: (p.count("/"), p)) if matches else None


async def _python_symbol(env: ExecutionEnvironment, dotted: str, files: set[str],
                         by_name: dict[str, list[str]]) -> str | None:
    """The file defining ``module.name`` (``pkg.mod.func``, ``mod.Class.method``)."""
    parts = dotted.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        module, rest = "/".join(parts[:cut]), ".".join(parts[cut:])
        candidates = [f"{base}{module}{end}" for base in ("", "src/", "lib/") for end in (".py", "/__init__.py")]
        if cut == 1:
            candidates += by_name.get(module + ".py", [])
        for path in dict.fromkeys(c for c in candidates if c in files):
            data = await _read(env, path)
            if data is not None and any(s.qualified_name == rest for s in parse_file(path, data).symbols):
                return path
    return None


async def named_files(env: ExecutionEnvironment, task: str, files: list[str]) -> list[str]:
    """Workspace files the task names, in the order it names them."""
    present, by_name, root = set(files), _by_name(files), env.working_directory()
    found: list[str] = []
    for name in file_names(task, lambda n: _resolve_file(n, present, by_name, root) is not None):
        path = _resolve_file(name, present, by_name, root)
        if path is not None and path not in found:
            found.append(path)
    for match in _DOTTED.finditer(task):
        dotted = match.group(1)
        if dotted.rsplit(".", 1)[1].lower() in FILE_EXTENSIONS:
            continue
        path = await _python_symbol(env, dotted, present, by_name)
        if path is not None and path not in found:
            found.append(path)
    return found


def _imports(file: _File, resolver: ImportResolver) -> list[str]:
    language = language_for(file.path)
    if language is None:
        return []
    targets: list[str] = []
    for item in parse_file(file.path, file.data).imports:
        targets += resolver.resolve(file.path, language, item)[1]
    return list(dict.fromkeys(targets))


async def _related(env: ExecutionEnvironment, named: list[_File], files: list[str]) -> list[_File]:
    """Test files importing the named files, then the files these import."""
    resolver = ImportResolver(set(files), {})
    names = {f.path for f in named}
    related: dict[str, _File] = {}
    stems = {posixpath.splitext(posixpath.basename(n))[0] for n in names}
    tests = [p for p in files if _TEST_FILE.search(p) and p not in names and language_for(p)]
    tests.sort(key=lambda p: not any(stem in posixpath.basename(p) for stem in stems))  # likely ones first
    for path in tests[:MAX_TESTS_PARSED]:
        data = await _read(env, path)
        if data is None:
            continue
        tested = [t for t in _imports(_File(path, data), resolver) if t in names]
        if tested:
            related[path] = _File(path, data, f"a test of {', '.join(tested)}")
    for file in named:
        for target in _imports(file, resolver):
            if target not in names and target not in related and (data := await _read(env, target)):
                related[target] = _File(target, data, f"imported by {file.path}")  # (an empty __init__.py: no)
    return list(related.values())


def _included(data: bytes, task: str) -> bool:
    """The task already holds the file's text (a custom command's ``@file``)."""
    text = data.decode("utf-8", "replace").strip()
    return bool(text) and text in task


def _render(file: _File, budget: int) -> tuple[str, int, bool]:
    """The file as read_file shows it within ``budget`` characters: text, last line, whole."""
    lines = file.lines
    header = f"## {file.path}" + (f" ({file.why})" if file.why else "")
    if not lines:
        return f"{header}\n(empty file)", 0, True
    body = number_lines(lines, 1)
    if len(header) + 1 + len(body) <= budget:
        return f"{header}\n{body}", len(lines), True
    shown, size = 0, len(header) + 80
    width = max(3, len(str(len(lines))))
    for line in lines:
        size += width + 4 + len(line)
        if size > budget:
            break
        shown += 1
    note = f"[lines {shown + 1}-{len(lines)} not shown: call read_file with offset={shown + 1} to see them]"
    return f"{header}\n{number_lines(lines[:shown], 1)}\n{note}", shown, False


def _shares(sizes: list[int], total: int) -> list[int]:
    """Split ``total`` over items of ``sizes``: small ones whole, the rest equal shares."""
    shares = [0] * len(sizes)
    left, todo = total, sorted(range(len(sizes)), key=lambda i: sizes[i])
    for n, i in enumerate(todo):
        shares[i] = min(sizes[i], left // (len(todo) - n))
        left -= shares[i]
    return shares


async def _map(env: ExecutionEnvironment, files: list[str], budget: int) -> str:
    """The tree of ``files`` with their top-level definitions; the tree alone when that does
    not fit ``budget``; "" when neither does."""
    if not files or len(files) > MAX_LISTED:
        return ""
    plain = f"{MAP_HEADER}\n{file_tree(files, 3)}"
    if len(files) <= MAX_MAP_FILES:
        notes: dict[str, str] = {}
        for path in files:
            if language_for(path) is None or (data := await _read(env, path)) is None:
                continue
            names = [s.name for s in parse_file(path, data).symbols if "." not in s.qualified_name]
            if names:
                more = ", ..." if len(names) > MAX_NAMES_PER_FILE else ""
                notes[path] = ", ".join(names[:MAX_NAMES_PER_FILE]) + more
        full = f"{MAP_HEADER}\n{file_tree(files, 3, notes)}"
        if len(full) + 2 <= budget:
            return full
    return plain if len(plain) + 2 <= budget else ""


async def gather_task_context(env: ExecutionEnvironment, task: str, budget: int, *,
                              with_map: bool = True) -> TaskContext:
    """The named files, their tests and imports, and the map, in at most ``budget`` characters."""
    files = await _listing(env)
    named = [_File(p, data) for p in await named_files(env, task, files)
             if (data := await _read(env, p)) is not None and not _included(data, task)]
    parts: list[str] = []
    shown: list[FileShown] = []
    left = budget - len(FILES_HEADER) - len(TASK_HEADER) - 4

    def add(file: _File, share: int) -> None:
        nonlocal left
        text, last, whole = _render(file, share)
        if not last and not whole:
            return  # not one line fits
        parts.append(text)
        shown.append(FileShown(file.path, ops.fingerprint(file.data), last, whole))
        left -= len(text) + 2

    if named:
        sizes = [len(number_lines(f.lines, 1)) + len(f.path) + 40 for f in named]
        for file, share in zip(named, _shares(sizes, left), strict=True):
            add(file, share)
        for file in await _related(env, named, files):
            size = len(_render(file, 10**9)[0])
            if size + 2 <= left:
                add(file, size)
    blocks = [FILES_HEADER + "\n" + "\n\n".join(parts)] if parts else []
    if with_map:
        rest = [p for p in files if p not in {f.path for f in shown}]
        if (tree := await _map(env, rest, left)):
            blocks.append(tree)
    if not blocks:
        return TaskContext("", ())
    return TaskContext("\n\n".join([*blocks, TASK_HEADER]), tuple(shown))


@dataclass(frozen=True)
class PlainContext:
    """The same choice of files as :func:`gather_task_context`, as plain texts (no line
    numbers: the small-model strategy asks for SEARCH text copied exactly)."""

    files: tuple[tuple[str, str], ...]
    """(path, text) of the named files, then their tests and imports, each whole."""
    map: str
    """The short map of the other files ("" when it does not fit)."""
    listing: tuple[str, ...]
    """Every file of the workspace (at most :data:`MAX_LISTED` are looked at)."""


async def gather_plain_context(env: ExecutionEnvironment, task: str, budget: int) -> PlainContext:
    """The files the task names (by file name, path or ``module.name``, never by its verbs),
    their tests and imports, whole while they fit ``budget`` characters, then the map."""
    files = await _listing(env)
    # By path, not in the order the task names them: a reworded task gets the same context.
    named = [_File(p, data) for p in sorted(await named_files(env, task, files))
             if (data := await _read(env, p)) is not None]
    chosen: list[tuple[str, str]] = []
    left = budget
    for file in [*named, *(await _related(env, named, files) if named else [])]:
        text = file.data.decode("utf-8", "replace")
        if len(text) + len(file.path) + 20 > left:
            continue
        chosen.append((file.path, text))
        left -= len(text) + len(file.path) + 20
    rest = [p for p in files if p not in {path for path, _ in chosen}]
    return PlainContext(tuple(chosen), await _map(env, rest, left), tuple(files[:MAX_LISTED]))
