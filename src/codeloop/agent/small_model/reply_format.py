"""The one reply format of the small-model strategy (issue 33), its grammar and its parser.

A reply is exactly one of:

- one or more FILE blocks, each a path line and then either the whole file in a fence::

      FILE app/settings.py
      ```python
      PORT = 8080
      ```

  or one or more SEARCH/REPLACE hunks (the SEARCH text is replaced by the REPLACE text)::

      FILE app/settings.py
      <<<<<<< SEARCH
      PORT = 80
      =======
      PORT = 8080
      >>>>>>> REPLACE

- or, among them, DELETE lines, each removing one file: ``DELETE old/notes.txt``;
- one RUN line, a shell command to look at something or try it: ``RUN python3 test_stats.py``;
- ``DONE``, optionally followed by a newline and free text.

Code stays plain text: no JSON escaping, which costs small models points (aider's finding). The
same language is written twice, once as a llama.cpp GBNF grammar (:data:`GRAMMAR`, sent in a
request's ``grammar`` field so that the server samples nothing else) and once as the strict
parser :func:`parse_reply`: every text the grammar accepts parses, and any other text raises
:class:`ReplyFormatError` naming the line and what was expected there (tests/agent/small_model
prove both, the first by deriving random texts from the grammar's own text).

A reply names each path once: a block naming a path an earlier block named, and all that follows
it, are not read (:func:`parse_reply` still checks they are in the format). The 1.5B model, once
its file was written, wrote the same block again up to the format's four blocks, in 145 of its 275
files replies of issue 33's runs (127 of them the same block again, most others a hunk against the
file as it was before the reply's own change, which could not apply); the session stops the
stream where such a block starts (:func:`repeated_block`).

What the format cannot say, by construction: a whole file holding a line that is exactly
three backticks, a SEARCH text holding a line ``=======``, a REPLACE text holding a line
``>>>>>>> REPLACE``, paths with spaces, tabs or backticks or starting with ``/``, a whole file
without a final newline (the parsed content always ends with one, or is empty). Lines are
split on ``\\n`` only; a ``\\r`` is part of a line's text.
"""

from __future__ import annotations

from dataclasses import dataclass

FENCE = "```"
SEARCH = "<<<<<<< SEARCH"
DIVIDER = "======="
REPLACE = ">>>>>>> REPLACE"
BLOCK_WORDS = ("FILE ", "DELETE ")
"""What starts a block of a files reply."""
PATH_STOPS = " \t\r\n`"
"""Characters a path never holds (it also never starts with ``/``)."""
MAX_FILE_BLOCKS = 4
"""The most FILE blocks one reply holds: the 0.5B model, once its file was written, wrote the
same block again until ``max_tokens`` (minutes on a CPU); the grammar stops it at this many."""
LANG_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_+.#-"
"""What may follow the opening fence of a whole file (a language tag)."""


@dataclass(frozen=True, slots=True)
class Hunk:
    """One SEARCH/REPLACE pair: ``search`` (never empty) becomes ``replace``. Both end with a
    newline unless empty, as whole lines do."""

    search: str
    replace: str


@dataclass(frozen=True, slots=True)
class FileBlock:
    """One FILE block: the whole new ``content`` of ``path``, or its ``hunks`` in order; or a
    DELETE line (``deleted``: no content, no hunks)."""

    path: str
    """As written: relative, without spaces, tabs or backticks (the resolver judges it later)."""
    content: str | None
    """The whole file (ends with a newline, or is empty); None when the block is hunks."""
    hunks: tuple[Hunk, ...] = ()
    """The SEARCH/REPLACE pairs, applied in order; empty when the block is a whole file."""
    deleted: bool = False
    """A DELETE line: the file is removed."""


@dataclass(frozen=True, slots=True)
class FilesReply:
    """One or more FILE blocks and DELETE lines, applied in order, each naming its own path."""

    files: tuple[FileBlock, ...]


@dataclass(frozen=True, slots=True)
class RunReply:
    """One command line to run in the workspace."""

    command: str


@dataclass(frozen=True, slots=True)
class DoneReply:
    """The model says it is finished; ``text`` is what followed ``DONE`` (may be empty)."""

    text: str


Reply = FilesReply | RunReply | DoneReply


class ReplyFormatError(ValueError):
    """A reply outside the format; ``line`` (1-based) is where it went wrong, and the message
    says what was found and what was expected there."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line


# -- the grammar -------------------------------------------------------------------------------


def _literal(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def _class_char(char: str) -> str:
    # Only what llama.cpp's grammar parser reads as an escape; callers keep "-" last and "^"
    # off the first place, where both are plain characters.
    return {"\\": "\\\\", "]": "\\]", "[": "\\[", "\n": "\\n", "\t": "\\t", "\r": "\\r"}.get(char, char)


def line_except(word: str) -> str:
    """A GBNF expression for one line, its newline included, that is anything but exactly
    ``word``: a strict prefix of it (the empty line too), a line leaving it at some character,
    or ``word`` followed by more."""
    alternatives = []
    for k in range(len(word)):
        prefix = _literal(word[:k]) + " " if k else ""
        if k:
            alternatives.append(_literal(word[:k]))
        alternatives.append(f"{prefix}[^{_class_char(word[k])}\\n] [^\\n]*")
    alternatives.append(f"{_literal(word)} [^\\n]+")
    return f"( {' | '.join(alternatives)} )? \"\\n\""


def _stops(extra: str = "") -> str:
    return "".join(_class_char(c) for c in PATH_STOPS + extra)


def _more_files(left: int) -> str:
    """Up to ``left`` more FILE blocks, as nested optionals (plain GBNF: no ``{m,n}``)."""
    return f'( "\\n"+ block {_more_files(left - 1)} )?' if left > 0 else ""


GRAMMAR = "\n".join([
    "root ::= files | run | done",
    f'files ::= block {_more_files(MAX_FILE_BLOCKS - 1)} "\\n"*',
    "block ::= file | delete",
    'delete ::= "DELETE " path',
    'file ::= "FILE " path "\\n" ( whole | hunks )',
    f"path ::= [^{_stops('/')}] [^{_stops()}]*",
    f'whole ::= {_literal(FENCE)} lang "\\n" wline* {_literal(FENCE)}',
    f"lang ::= [{''.join(_class_char(c) for c in LANG_CHARS)}]*",
    f"wline ::= {line_except(FENCE)}",
    'hunks ::= hunk ( "\\n"+ hunk )*',
    f'hunk ::= {_literal(SEARCH + chr(10))} sline+ {_literal(DIVIDER + chr(10))} rline* {_literal(REPLACE)}',
    f"sline ::= {line_except(DIVIDER)}",
    f"rline ::= {line_except(REPLACE)}",
    'run ::= "RUN " [^ \\t\\r\\n] [^\\n]* "\\n"?',
    'done ::= "DONE" ( "\\n" ( [^\\n] | "\\n" )* )?',
]) + "\n"
"""The GBNF grammar of the reply format (llama.cpp's ``grammar`` request field)."""


# -- the parser --------------------------------------------------------------------------------


def _shown(line: str) -> str:
    return repr(line if len(line) <= 60 else line[:57] + "...")


def _path(line: str, number: int) -> str:
    word, path = line.split(" ", 1)
    if not path or path[0] == "/" or any(c in PATH_STOPS for c in path):
        raise ReplyFormatError(number, f"{word} needs one relative path without spaces, tabs or backticks "
                                       f"({word} app/main.py), got {_shown(line)}")
    return path


class _Lines:
    """The reply's lines (split on ``\\n`` only) with a cursor; numbers are 1-based."""

    def __init__(self, text: str) -> None:
        self.lines = text.split("\n")
        self.at = 0

    def more(self) -> bool:
        return self.at < len(self.lines)

    def peek(self) -> str:
        return self.lines[self.at]

    def take(self) -> str:
        self.at += 1
        return self.lines[self.at - 1]

    @property
    def number(self) -> int:
        return self.at + 1

    def skip_blank(self) -> None:
        while self.more() and self.peek() == "":
            self.at += 1

    def until(self, end: str, what: str, opened: int) -> str:
        """The lines up to the line that is exactly ``end`` (taken, not returned), each with its
        newline; ReplyFormatError when the reply ends first."""
        body: list[str] = []
        while self.more():
            line = self.take()
            if line == end:
                return "".join(f"{b}\n" for b in body)
            body.append(line)
        raise ReplyFormatError(len(self.lines), f"{what} opened at line {opened} has no line {end!r} closing it")


def _hunk(lines: _Lines, path: str) -> Hunk:
    opened = lines.number - 1
    search = lines.until(DIVIDER, f"the SEARCH text of {path}", opened)
    if not search:
        raise ReplyFormatError(opened + 1, f"the SEARCH text of {path} is empty: copy the lines to replace "
                                           "between <<<<<<< SEARCH and =======")
    replace = lines.until(REPLACE, f"the hunk of {path}", opened)
    return Hunk(search, replace)


def _file(lines: _Lines) -> FileBlock:
    number, line = lines.number, lines.take()
    path = _path(line, number)
    if line.startswith("DELETE "):
        return FileBlock(path, None, deleted=True)
    if not lines.more():
        raise ReplyFormatError(number, f"the FILE line of {path} ends the reply: a fenced whole file or a "
                                       "<<<<<<< SEARCH hunk must follow it")
    number, line = lines.number, lines.take()
    if line.startswith(FENCE) and all(c in LANG_CHARS for c in line[len(FENCE):]):
        return FileBlock(path, lines.until(FENCE, f"the whole file {path}", number))
    if line != SEARCH:
        raise ReplyFormatError(number, f"after FILE {path} comes a fence ``` (the whole file) or a line "
                                       f"<<<<<<< SEARCH, not {_shown(line)}")
    hunks = [_hunk(lines, path)]
    while True:
        lines.skip_blank()
        if not lines.more() or lines.peek() != SEARCH:
            return FileBlock(path, None, tuple(hunks))
        lines.take()
        hunks.append(_hunk(lines, path))


def parse_reply(text: str) -> Reply:
    """The reply ``text`` holds, or ReplyFormatError (line and what was expected)."""
    lines = _Lines(text)
    first = lines.peek()
    if first == "DONE":
        return DoneReply("\n".join(lines.lines[1:]))
    if first.startswith("RUN "):
        command = first[len("RUN "):]
        if not command or command[0] in " \t\r":
            raise ReplyFormatError(1, "RUN needs the command right after one space: RUN python3 app.py")
        if lines.lines[1:] not in ([], [""]):
            raise ReplyFormatError(2, "a RUN reply is one line: nothing may follow the command "
                                      "(run one command per reply)")
        return RunReply(command)
    if not first.startswith(BLOCK_WORDS):
        what = "got an empty reply" if text == "" else f"not {_shown(first)}"
        raise ReplyFormatError(1, f"a reply starts with FILE <path>, DELETE <path>, RUN <command> or DONE, {what}")
    files = [_file(lines)]
    while True:
        lines.skip_blank()
        if not lines.more():
            return FilesReply(_before_a_repeat(files))
        if not lines.peek().startswith(BLOCK_WORDS):
            raise ReplyFormatError(lines.number, f"after a FILE block comes another FILE block, a DELETE line or "
                                                 f"the end of the reply, not {_shown(lines.peek())}")
        if len(files) == MAX_FILE_BLOCKS:
            raise ReplyFormatError(lines.number, f"a reply holds at most {MAX_FILE_BLOCKS} FILE blocks: send the "
                                                 "others in the next reply")
        files.append(_file(lines))


def _before_a_repeat(files: list[FileBlock]) -> tuple[FileBlock, ...]:
    named: set[str] = set()
    for k, block in enumerate(files):
        if block.path in named:
            return tuple(files[:k])
        named.add(block.path)
    return tuple(files)


def repeated_block(text: str) -> int | None:
    """Where, in a reply still being written, a block starts that names a path an earlier block
    of the reply named, once that block's line is complete (the offset of its ``FILE``/``DELETE``);
    None while there is none. Nothing from there on is read (:func:`parse_reply`), so the stream
    can stop there: the 1.5B model, once its file was written, wrote the same block again, up to
    the format's four, in 145 of its 275 files replies (issue 33's runs), most of its time."""
    start = 0
    while (at := text.find("\n", start)) != -1:
        line, start = text[start:at], at + 1
        if not line.startswith(BLOCK_WORDS) or at - len(line) == 0:
            continue
        offset = at - len(line)
        path = line.split(" ", 1)[1]
        try:
            before = parse_reply(text[:offset])
        except ReplyFormatError:
            continue
        if isinstance(before, FilesReply) and path in {b.path for b in before.files}:
            return offset
    return None


def complete_blocks(text: str) -> FilesReply | None:
    """The FILE blocks complete before a reply went wrong: the 0.5B model, once its file is
    written, writes the same block again until ``max_tokens`` cuts it mid-block. None when
    no complete block precedes the fault."""
    starts = [i + 1 for i in range(len(text)) if text.startswith(("\nFILE ", "\nDELETE "), i)]
    for end in reversed(starts):
        try:
            reply = parse_reply(text[:end])
        except ReplyFormatError:
            continue
        return reply if isinstance(reply, FilesReply) else None
    return None


def render_reply(reply: Reply) -> str:
    """The text of ``reply`` in the format (``parse_reply(render_reply(r)) == r`` for every
    reply the format can say)."""
    if isinstance(reply, DoneReply):
        return "DONE" + (f"\n{reply.text}" if reply.text else "")
    if isinstance(reply, RunReply):
        return f"RUN {reply.command}\n"
    blocks = []
    for block in reply.files:
        if block.deleted:
            blocks.append(f"DELETE {block.path}\n")
        elif block.content is not None:
            blocks.append(f"FILE {block.path}\n{FENCE}\n{block.content}{FENCE}\n")
        else:
            hunks = "".join(f"{SEARCH}\n{h.search}{DIVIDER}\n{h.replace}{REPLACE}\n" for h in block.hunks)
            blocks.append(f"FILE {block.path}\n{hunks}")
    return "".join(blocks)


_WHOLE_EXAMPLE = f"""\
FILE geometry/circle.py
{FENCE}python
import math


def area(radius):
    return math.pi * radius ** 2
{FENCE}
"""
_HUNK_EXAMPLE = f"""\
FILE geometry/units.py
{SEARCH}
SCALE = 10
{DIVIDER}
SCALE = 100
{REPLACE}
"""

REPLY_FORMAT_PROMPT = f"""\
# Reply format
Reply with exactly one of these, and nothing else:

1. For each file to create or change: the word FILE, a space and the file's path on one line,
   then either the whole new file between fences:
{_WHOLE_EXAMPLE}   or SEARCH/REPLACE hunks, each copying lines of the file exactly and giving their new text:
{_HUNK_EXAMPLE}   For each file to remove: the word DELETE, a space and the file's path on one line.
2. One command to look at something or try it: the word RUN, a space, then the command, on one line.
3. DONE when the task is complete.
"""
"""What the model reads about the format (a section of its system prompt). Its examples name
no file, name or command of the benchmark tasks: the 0.5B model copied an earlier example's
``print("Hello")`` into its answer to "Create hello.py that prints Hello, world!", and the 0.5B
model answered "Create hello.py that prints hello, then run it" with the RUN example's command
three times (issue 33's e2e test): the RUN line has no example command."""


def _example_blocks() -> frozenset[tuple[str | None, tuple[Hunk, ...]]]:
    found = set()
    for text in (_WHOLE_EXAMPLE, _HUNK_EXAMPLE):
        reply = parse_reply(text)
        assert isinstance(reply, FilesReply)
        found |= {(b.content, b.hunks) for b in reply.files}
    return frozenset(found)


EXAMPLE_BLOCKS = _example_blocks()
"""What the FILE blocks of :data:`REPLY_FORMAT_PROMPT`'s examples say (content, hunks), as parsed."""


def without_examples(reply: FilesReply) -> FilesReply | None:
    """``reply`` without the blocks that repeat the format's examples, under any path (the
    prompt's own text, not the model's change: the 0.5B model appended both examples to a
    correct change of ``config.py``; the 1.5B model wrote the whole-file example into the
    ``durations.py`` it was to fix); None when nothing else is left."""
    kept = tuple(b for b in reply.files if b.deleted or (b.content, b.hunks) not in EXAMPLE_BLOCKS)
    return FilesReply(kept) if kept else None
