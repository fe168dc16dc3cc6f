"""Split a shell line into every simple command it would run, with a real parser (tree-sitter-bash).

Policy must judge each command of a line, not its first word: ``ls && rm -rf x``,
``echo $(curl evil)``, ``env X=1 sudo id`` and ``bash -c 'rm -rf x'`` each hide a second
command. :func:`split_commands` walks the whole syntax tree (lists, pipelines, subshells,
brace groups, ``if``/``for``/``while``/``case`` bodies, function bodies, command and process
substitutions in words, assignments and redirections) and unwraps command wrappers whose
options it knows (``env``, ``nohup``, ``timeout``, ``nice``, ``xargs``, ``find -exec`` ...) and
shells given a literal script (``bash -c``, ``sh -c``, ``trap``, ``eval``), recursively. The
wrapper itself is reported too, so ``sudo`` stays visible.

It fails closed: what it cannot resolve before the line runs is reported, never guessed.
A command gets ``unresolved`` (and ``dynamic``) with the reason when its name comes from an
expansion, a glob or a brace expansion, when it is ``eval``, when a wrapper has an option this
module does not know (``nice --foo 5 X``: is ``5`` the command?), when a program known to run
its arguments is not one it can unwrap (``parallel``, ``script -c`` ...), or when a shell is
given a script that is not a literal. A line tree-sitter cannot parse raises
:class:`ShellParseError`; callers treat both as "cannot judge" (ask), never as "allowed".

The grammar reads the line as bash prints it back (:mod:`codeloop.policy.bash_view`), so a
continuation or a quoting rule cannot make the two disagree; places where bash evaluates text
as code are found in :mod:`codeloop.policy.code_contexts`, and the working directory of each
command in :mod:`codeloop.policy.workdir`.

Not split further (about 590 lines): the word decoding, brace expansion and the tree walk
share the walker's state and one grammar's node types; the wrapper tables live apart in
:mod:`codeloop.policy.wrappers`.
"""

from __future__ import annotations

import itertools
import posixpath
import re
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

from tree_sitter import Language, Node, Parser

from codeloop.policy.bash_view import BashViewError, bash_normalize
from codeloop.policy.code_contexts import code_context
from codeloop.policy.workdir import with_workdirs
from codeloop.policy.wrappers import (
    SHELL_ONLY_WORDS,
    SHELLS,
    is_program_wrapper,
    shell_script_index,
    wrapped_start,
)

MAX_NESTING = 6
"""Deepest ``bash -c`` / ``eval`` nesting followed before the line counts as unparseable."""
MAX_BRACE_WORDS = 64
"""Most words one brace expansion may produce before the argument counts as unresolved."""



class ShellParseError(ValueError):
    """Raised when a shell line cannot be parsed (or nests shells too deeply)."""


@dataclass(frozen=True)
class Redirect:
    """One redirection of a simple command."""

    op: str
    """The operator as written: ``>``, ``>>``, ``<``, ``>&``, ``&>``, ``>|`` ..."""
    target: str
    """The file name or descriptor after the operator, quotes removed."""
    dynamic: bool = False
    """True when the target comes from an expansion (``> $OUT``)."""

    @property
    def writes(self) -> bool:
        """True when the redirection writes to (or truncates) the target."""
        return ">" in self.op


@dataclass(frozen=True)
class ParsedCommand:
    """One simple command found in a shell line."""

    argv: tuple[str, ...]
    """The words after leading assignments, quotes removed; expansions kept as written;
    brace expansions in arguments expanded."""
    text: str
    """The source text of this command (for messages)."""
    assignments: tuple[str, ...] = ()
    """Leading ``NAME=value`` words (or those given to ``env``, ``export``)."""
    redirects: tuple[Redirect, ...] = ()
    """Redirections attached to the command."""
    dynamic: bool = False
    """True when the command cannot be judged before it runs: its name comes from an
    expansion (``$CMD``, ``$(...)``), or it is ``unresolved`` for another reason."""
    via: tuple[str, ...] = ()
    """Wrappers this command was found inside, outermost first (``env``, ``bash -c``, ``$(...)``)."""
    stdin_piped: bool = False
    """True when the command reads the previous pipeline stage on stdin."""
    stdin_inline: bool = False
    """True when stdin is a here-document or here-string (``<<EOF``, ``<<<``)."""
    unresolved: str = ""
    """Why this command cannot be judged before it runs (``""`` when it can)."""
    dynamic_args: tuple[int, ...] = ()
    """Indexes into ``argv`` of words that come from an expansion (``rm $F``)."""
    glob_args: tuple[int, ...] = ()
    """Indexes into ``argv`` of words with an unquoted glob (``cat *.pem``)."""
    cwds: tuple[str | None, ...] = (".",)
    """Every directory the command may run in, relative to the workspace root, after the
    ``cd``/``pushd``/``popd`` of the whole line (order ignored: loops and functions reorder);
    ``None`` among them when one cannot be told (``cd "$D"``, ``cd /tmp``, ``popd``)."""

    @property
    def name(self) -> str:
        """The program name without directories (``/usr/bin/rm`` -> ``rm``); ``""`` if none."""
        return posixpath.basename(self.argv[0]) if self.argv else ""

    @property
    def args(self) -> tuple[str, ...]:
        """The arguments after the program name."""
        return self.argv[1:]


def split_commands(line: str) -> list[ParsedCommand]:
    """Every simple command ``line`` would run; raise :class:`ShellParseError`.

    Order: commands in source order; a wrapper is followed by what it wraps, then by the
    commands substituted into its words (``$(...)``, backticks, ``<(...)``)."""
    return with_workdirs(_split(line, via=(), depth=0))


@cache
def _parser() -> Parser:
    import tree_sitter_bash

    return Parser(Language(tree_sitter_bash.language()))


def _split(line: str, via: tuple[str, ...], depth: int) -> list[ParsedCommand]:
    if depth > MAX_NESTING:
        raise ShellParseError(f"shell nesting deeper than {MAX_NESTING} levels")
    if not line.strip():
        return []
    try:
        line.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ShellParseError(f"the line is not valid text ({exc.reason})") from None
    try:
        # A line bash cannot read is not judged, and the grammar reads bash's own print of the
        # line: continuations joined, one command per line (the grammar misreads a word that
        # starts a line with a backslash, `ls` newline `\rm x`, as part of the line before).
        printed = bash_normalize(line)
    except BashViewError as exc:
        raise ShellParseError(str(exc)) from None
    found = _walk(printed, via, depth)
    if "<<" in line and printed != line:
        # bash prints a list that follows a here-document after its body, a layout the grammar
        # can misread (the body as commands): judge what either reading finds.
        known = {(c.argv, c.redirects, c.assignments) for c in found}
        found += [c for c in _walk(line, via, depth) if (c.argv, c.redirects, c.assignments) not in known]
    return found


def _walk(line: str, via: tuple[str, ...], depth: int) -> list[ParsedCommand]:
    if not line.strip():
        return []
    # Each UTF-8 byte is handed to tree-sitter as one UTF-16 unit, so its bash scanner never
    # sees a code point over 255: it passes the character after `{` to isdigit(), which reads
    # out of bounds for larger values and can crash the process (`{` + U+BB2A9 did, under the
    # fail-closed property test). Bash reads bytes too, so the split is the same.
    source = line.encode("utf-8").decode("latin-1").encode("utf-16-le")
    root = _parser().parse(source, encoding="utf16le").root_node
    if root.has_error:
        bad = _first_error(root)
        where = f" near {_decode(source[bad.start_byte:bad.start_byte + 60])!r}" if bad else ""
        raise ShellParseError(f"cannot parse shell line{where} (unbalanced quotes or an incomplete command?)")
    walker = _Walker(via, depth)
    walker.visit(root, stdin_piped=False)
    why = code_context(root, _text)
    if why:
        walker.found.append(ParsedCommand(argv=(), text=line, dynamic=True, unresolved=why, via=via))
    return walker.found


def _first_error(node: Node) -> Node | None:
    if node.type == "ERROR" or node.is_missing:
        return node
    return next((_first_error(child) for child in node.children if child.has_error), None)


def _decode(raw: bytes) -> str:
    return raw.decode("utf-16-le", "replace").encode("latin-1", "replace").decode("utf-8", "replace")


def _text(node: Node) -> str:
    return _decode(node.text or b"")


@dataclass
class _Word:
    value: str
    """The word as the program sees it (quotes removed), expansions kept as written."""
    pattern: str
    """The word with quoted characters backslash-escaped: what globbing and braces see."""
    dynamic: bool = False

    @property
    def glob(self) -> bool:
        return bool(re.search(r"(?<!\\)(?:\\\\)*[*?]|(?<!\\)(?:\\\\)*\[[^\]]*\]", self.pattern))

    @property
    def brace(self) -> bool:
        return _brace_split(self.pattern) is not None


_WORD_STATEMENTS = frozenset({"word", "string", "raw_string", "ansi_c_string", "translated_string",
                              "concatenation", "simple_expansion", "expansion", "command_substitution",
                              "process_substitution", "arithmetic_expansion", "brace_expression",
                              "number", "array"})


def _unescape(raw: str) -> str:
    return re.sub(r"\\(\n|.)", lambda m: "" if m.group(1) == "\n" else m.group(1), raw, flags=re.DOTALL)


def _escaped(value: str) -> str:
    return "".join("\\" + ch for ch in value)


def _word(node: Node) -> _Word:
    kind = node.type
    raw = _text(node)
    if kind in ("word", "number"):
        return _Word(_unescape(raw), raw)
    if kind == "raw_string":
        return _Word(raw[1:-1], _escaped(raw[1:-1]))
    if kind == "ansi_c_string":
        try:
            value = raw[2:-1].encode("latin-1", "backslashreplace").decode("unicode_escape")
        except UnicodeDecodeError:
            return _Word(raw, raw, dynamic=True)
        return _Word(value, _escaped(value))
    if kind in ("string", "translated_string"):
        inner = raw[raw.index('"') + 1:-1]
        value = re.sub(r'\\([\\"$`\n])', lambda m: "" if m.group(1) == "\n" else m.group(1), inner)
        dynamic = any(c.type not in ("string_content", '"', "$") for c in node.children)
        return _Word(value, _escaped(value), dynamic)
    if kind == "concatenation":
        parts = [_word(c) for c in node.children]
        return _Word("".join(p.value for p in parts), "".join(p.pattern for p in parts),
                     any(p.dynamic for p in parts))
    if kind == "brace_expression":  # {1..5}: a sequence, expanded by bash at run time
        return _Word(raw, raw)
    return _Word(raw, raw, dynamic=True)  # expansions, substitutions, arrays


def _brace_split(pattern: str) -> tuple[str, list[str], str] | None:
    """The first unquoted ``{a,b}`` of ``pattern``: (prefix, alternatives, suffix), or None."""
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "{" and not (i and pattern[i - 1] == "$"):
            depth, j, cuts = 0, i, []
            while j < len(pattern):
                c = pattern[j]
                if c == "\\":
                    j += 2
                    continue
                depth += c == "{"
                depth -= c == "}"
                if c == "," and depth == 1:
                    cuts.append(j)
                if depth == 0:
                    break
                j += 1
            if depth == 0 and cuts:
                bounds = [i, *cuts, j]
                alts = [pattern[a + 1:b] for a, b in itertools.pairwise(bounds)]
                return pattern[:i], alts, pattern[j + 1:]
            if depth == 0 and ".." in pattern[i:j]:
                return pattern[:i], [pattern[i:j + 1]], pattern[j + 1:]  # a sequence: kept whole
        i += 1
    return None


def _expand_braces(pattern: str) -> list[str] | None:
    """Every word a brace expansion makes (escaped form), or None when there are too many."""
    done: list[str] = []
    todo = [pattern]
    while todo:
        cur = todo.pop()
        cut = _brace_split(cur)
        if cut is None or len(cut[1]) == 1:
            done.append(cur)
        else:
            todo.extend(cut[0] + alt + cut[2] for alt in reversed(cut[1]))
        if len(done) + len(todo) > MAX_BRACE_WORDS:
            return None
    return done


class _Walker:
    def __init__(self, via: tuple[str, ...], depth: int) -> None:
        self.via = via
        self.depth = depth
        self.found: list[ParsedCommand] = []
        self.pending: dict[tuple[int, int, str], list[Node]] = {}
        """Redirections waiting for the command they belong to (start, end, type)."""

    def visit(self, node: Node, stdin_piped: bool) -> None:
        kind = node.type
        extra = self.pending.pop((node.start_byte, node.end_byte, kind), [])
        if kind == "command":
            self._command(node, extra, stdin_piped)
        elif kind == "redirected_statement":
            body = node.child_by_field_name("body")
            redirects = [*(c for c in node.named_children if c != body), *extra]
            # tree-sitter-bash hangs `a && b > x` on the whole list; bash gives it to `b`.
            target = body
            while target is not None and target.type in ("list", "pipeline") and target.named_children:
                target = target.named_children[-1]
            if body is None or target is None:
                self._emit_bare(node, redirects)
                return
            key = (target.start_byte, target.end_byte, target.type)
            self.pending[key] = [*self.pending.get(key, []), *redirects]
            self.visit(body, stdin_piped)
        elif extra:  # redirections of a group, subshell or loop
            self.visit_plain(node, stdin_piped)
            self._emit_bare(node, extra)
        else:
            self.visit_plain(node, stdin_piped)

    def visit_plain(self, node: Node, stdin_piped: bool) -> None:
        kind = node.type
        if kind == "command":
            self._command(node, [], stdin_piped)
        elif kind == "pipeline":
            first = True
            for part in node.named_children:
                self.visit(part, stdin_piped=stdin_piped if first else True)
                first = False
        elif kind in ("variable_assignment", "variable_assignments"):
            self._emit_bare(node, [])
        elif kind in ("declaration_command", "unset_command"):
            self._declaration(node)
        elif kind in ("comment", "heredoc_body", "heredoc_start", "heredoc_end", "file_descriptor"):
            return
        elif kind in _WORD_STATEMENTS or kind.endswith("_redirect"):
            self._substitutions_in(node)
        else:  # lists, groups, subshells, if/for/while/case, functions, tests, arithmetic
            for child in node.named_children:
                self.visit(child, stdin_piped if kind in ("subshell", "compound_statement") else False)

    def _substitutions_in(self, node: Node) -> None:
        """Commands hidden inside words: ``$(...)``, backticks, ``<(...)``."""
        if node.type == "command_substitution" and _text(node).startswith("`"):
            # Backquotes nest only escaped (echo `a \`b\``), which tree-sitter reads as one level:
            # the inner text is unescaped as bash does (\\, \`, \$) and parsed again.
            inner_line = re.sub(r"\\([\\`$])", r"\1", _text(node)[1:-1])
            self.found.extend(_split(inner_line, (*self.via, "$(...)"), self.depth + 1))
        elif node.type in ("command_substitution", "process_substitution"):
            mark = "$(...)" if node.type == "command_substitution" else "<(...)"
            inner = _Walker((*self.via, mark), self.depth)
            for stmt in node.named_children:
                inner.visit(stmt, stdin_piped=False)
            self.found.extend(inner.found)
        elif node.type != "heredoc_redirect":  # its trailing commands are visited as `after`
            for child in node.named_children:
                self._substitutions_in(child)

    def _redirect(self, node: Node, inline: list[str], after: list[Node]) -> Redirect | None:
        ops = "".join(c.type for c in node.children if not c.is_named)
        if node.type == "heredoc_redirect":
            start = next((c for c in node.named_children if c.type == "heredoc_start"), None)
            body = next((c for c in node.named_children if c.type == "heredoc_body"), None)
            inline.append(_text(body) if body is not None else "")
            # What follows the here-document's start on its line (`<<EOF && rm x`) hangs here.
            after.extend(c for c in node.named_children
                         if c.type not in ("heredoc_start", "heredoc_body", "heredoc_end"))
            op = "<<-" if "<<-" in ops else "<<"
            delimiter = _text(start) if start is not None else ""
            # An unquoted delimiter lets the body expand (`$(...)`): its text is decided at run time.
            return Redirect(op, _unescape(delimiter.strip("'\"")), dynamic=not re.search(r"['\"\\]", delimiter))
        dest = node.child_by_field_name("destination") or (node.named_children[-1] if node.named_children else None)
        if dest is None:
            return None
        word = _word(dest)
        if node.type == "herestring_redirect":
            inline.append(word.value)
            return Redirect("<<<", word.value, word.dynamic)
        return Redirect(ops or ">", word.value, word.dynamic)

    def _emit_bare(self, node: Node, redirect_nodes: list[Node]) -> None:
        """An assignment without a command, or redirections of a compound command."""
        assigns = [node] if node.type == "variable_assignment" else \
            [c for c in node.named_children if c.type == "variable_assignment"]
        inline: list[str] = []
        after: list[Node] = []
        redirects = [r for r in (self._redirect(n, inline, after) for n in redirect_nodes) if r]
        self.found.append(ParsedCommand(argv=(), text=_text(node), assignments=tuple(_assignment(a) for a in assigns),
                                        redirects=tuple(redirects), via=self.via))
        for n in [*assigns, *redirect_nodes]:
            self._substitutions_in(n)
        for n in after:
            self.visit(n, stdin_piped=False)

    def _declaration(self, node: Node) -> None:
        keyword = _text(node.children[0]) if node.children else "export"
        words = [_word(c) if c.type != "variable_name" else _Word(_text(c), _text(c))
                 for c in node.named_children if c.type in _WORD_STATEMENTS or c.type == "variable_name"]
        assigns = [_assignment(c) for c in node.named_children if c.type == "variable_assignment"]
        self.found.append(ParsedCommand(argv=(keyword, *(w.value for w in words)), text=_text(node),
                                        assignments=tuple(assigns), via=self.via))
        self._substitutions_in(node)

    def _command(self, node: Node, redirect_nodes: list[Node], stdin_piped: bool) -> None:
        assignments: list[str] = []
        words: list[_Word] = []
        inline: list[str] = []
        after: list[Node] = []
        for child in node.named_children:
            if child.type == "variable_assignment":
                assignments.append(_assignment(child))
            elif child.type == "command_name":
                words.append(_word(child.named_children[0]) if child.named_children else _Word("", ""))
            elif child.type.endswith("_redirect"):
                redirect_nodes = [*redirect_nodes, child]
            elif child.type in _WORD_STATEMENTS:
                words.append(_word(child))
        redirects = [r for r in (self._redirect(n, inline, after) for n in redirect_nodes) if r]
        argv: list[str] = []
        dyn: list[int] = []
        globs: list[int] = []
        unresolved = ""
        for i, w in enumerate(words):
            if i == 0 and (w.dynamic or w.glob or w.brace):
                what = "an expansion" if w.dynamic else "a glob" if w.glob else "a brace expansion"
                unresolved = f"the command name {w.value!r} comes from {what}, decided only when it runs"
            expanded = [w.pattern] if (i == 0 or w.dynamic or not w.brace) else _expand_braces(w.pattern)
            if expanded is None:
                unresolved = unresolved or f"the brace expansion {w.value!r} makes too many words"
                expanded = [w.pattern]
            for pat in expanded:
                if w.dynamic:
                    dyn.append(len(argv))
                if w.glob:
                    globs.append(len(argv))
                argv.append(w.value if len(expanded) == 1 else _unescape(pat))
        cmd = ParsedCommand(argv=tuple(argv), text=_text(node), assignments=tuple(assignments),
                            redirects=tuple(redirects), dynamic=bool(unresolved), via=self.via,
                            stdin_piped=stdin_piped, stdin_inline=bool(inline), unresolved=unresolved,
                            dynamic_args=tuple(dyn), glob_args=tuple(globs))
        self.found.append(cmd)
        self._unwrap(cmd)
        if cmd.name in SHELLS:
            for script in inline:  # a shell reading a here-document runs it: judge its commands
                self.found.extend(_split(script, (*self.via, f"{cmd.name} <<"), self.depth + 1))
        for child in node.named_children:
            if not child.type.endswith("_redirect"):
                self._substitutions_in(child)
        for red in redirect_nodes:
            self._substitutions_in(red)
        for n in after:
            self.visit(n, stdin_piped=n.prev_sibling is not None and n.prev_sibling.type in ("|", "|&"))

    def _nested(self, cmd: ParsedCommand, script_index: int, label: str) -> None:
        """Judge ``cmd.argv[script_index]`` as a shell line, or mark ``cmd`` unresolved."""
        if script_index >= len(cmd.argv):
            return
        if script_index in cmd.dynamic_args:
            self._mark(cmd, f"{label} runs {cmd.argv[script_index]!r}, a script built at run time")
            return
        self.found.extend(_split(cmd.argv[script_index], (*cmd.via, label), self.depth + 1))

    def _mark(self, cmd: ParsedCommand, why: str) -> None:
        marked = replace(cmd, unresolved=cmd.unresolved or why, dynamic=True)
        at = [i for i, c in enumerate(self.found) if c is cmd]
        if at:
            self.found[at[-1]] = marked
        else:
            self.found.append(marked)

    def _unwrap(self, cmd: ParsedCommand) -> None:
        """Report the command a wrapper runs (``env X=1 rm`` -> ``rm``), recursively."""
        name, argv = cmd.name, cmd.argv
        if cmd.dynamic or not argv:
            return
        fed = _code_from_a_stream(cmd)
        if fed:
            self._mark(cmd, fed)
            return
        if name in SHELLS:
            script = shell_script_index(argv)
            if script is None:
                self._mark(cmd, f"{name} has an option this policy does not know")
            elif script > 0:
                self._nested(cmd, script, f"{name} -c")
            return
        if name == "eval":
            self._mark(cmd, "eval runs a string as a new command line")
            if not cmd.dynamic_args:
                self.found.extend(_split(" ".join(argv[1:]), (*cmd.via, "eval"), self.depth + 1))
            return
        if name == "trap":
            first = 2 if argv[1:2] == ("--",) else 1
            if len(argv) > first + 1 and not (first == 1 and argv[1].startswith("-")):
                self._nested(cmd, first, "trap")
            return
        if name == "find":
            self._find_exec(cmd)
            return
        if name == "alias":
            for arg in argv[1:]:
                if "=" in arg:
                    self.found.extend(_split(arg.split("=", 1)[1], (*cmd.via, "alias"), self.depth + 1))
            return
        if name == "command" and any(a in ("-v", "-V") for a in argv[1:2]):
            return  # only prints what the name is
        if name in SHELL_ONLY_WORDS and cmd.via and is_program_wrapper(cmd.via[-1]):
            # `env X=1 coproc ...`: a program wrapper looks the word up on PATH, where no bash
            # keyword or builtin is; what it finds there cannot be told (found by hypothesis).
            self._mark(cmd, f"{cmd.via[-1]} runs a program named {name!r}, not bash's {name}")
            return
        start, why = wrapped_start(name, argv, cmd.dynamic_args)
        if why:
            self._mark(cmd, why)
            return
        if start is None or start >= len(argv):
            return
        if argv[start].startswith("-"):
            # An option after the wrapper's own operands (`flock FILE -c 'cmd'`) is one it reads
            # itself, often a command string: what it runs cannot be told.
            self._mark(cmd, f"{name} takes {argv[start]!r} after its operands, which this policy does not know")
            return
        assignments = tuple(a for a in argv[1:start] if name == "env" and "=" in a and not a.startswith("-"))
        if len(argv) - start == 1 and any(ch.isspace() for ch in argv[start]):
            # A wrapper given the command as one string (timeout 5 "a b") runs it through a
            # shell: judge it as a line.
            self._nested(cmd, start, name)
            return
        self._wrapped(cmd, start, len(argv), name, assignments=assignments, redirects=cmd.redirects,
                      stdin_piped=cmd.stdin_piped)

    def _wrapped(self, cmd: ParsedCommand, start: int, end: int, label: str, **fields: Any) -> None:
        """Report ``cmd.argv[start:end]``, the command ``label`` runs, and unwrap it in turn."""
        wrapped = ParsedCommand(argv=cmd.argv[start:end], text=cmd.text, via=(*cmd.via, label),
                                dynamic_args=tuple(i - start for i in cmd.dynamic_args if start <= i < end),
                                glob_args=tuple(i - start for i in cmd.glob_args if start <= i < end), **fields)
        # "{}" is replaced by find -exec (and xargs -I{}) with names read at run time.
        if 0 in wrapped.dynamic_args or 0 in wrapped.glob_args or "{}" in wrapped.argv[0]:
            wrapped = replace(wrapped, dynamic=True, unresolved=f"{label} runs {wrapped.argv[0]!r}, "
                              "a command name decided only when it runs")
        self.found.append(wrapped)
        if self.depth + len(wrapped.via) > MAX_NESTING * 3:
            raise ShellParseError("command wrappers nested too deeply")
        self._unwrap(wrapped)

    def _find_exec(self, cmd: ParsedCommand) -> None:
        i = 0
        while i < len(cmd.argv):
            if cmd.argv[i] in ("-exec", "-execdir", "-ok", "-okdir"):
                j = i + 1
                while j < len(cmd.argv) and cmd.argv[j] not in (";", "+", "\\;"):
                    j += 1
                if j > i + 1:
                    self._wrapped(cmd, i + 1, j, "find -exec")
                i = j
            i += 1


_INTERPRETERS = SHELLS | {"python", "python3", "perl", "ruby", "node", "php", "lua", "source", "."}
_STREAMS = ("/dev/stdin", "/dev/fd/", "/proc/", "/dev/tcp/", "/dev/udp/")


def _code_from_a_stream(cmd: ParsedCommand) -> str:
    """Why ``cmd`` runs code it reads from a stream the policy cannot see (``source <(...)``,
    ``. /dev/stdin <<< ...``, ``bash < <(...)``, ``python3 /dev/fd/3``), or ``""``."""
    if cmd.name not in _INTERPRETERS:
        return ""
    for red in cmd.redirects:
        if red.op in ("<", "<>") and red.target.startswith(("<(", ">(", *_STREAMS)):
            return f"{cmd.name} reads code from {red.target!r}, which this policy cannot see (like eval)"
    for arg in cmd.argv[1:]:
        if arg in ("-c", "-e", "--", "-"):
            break
        if arg.startswith("-"):
            continue
        if arg.startswith(("<(", ">(")) or arg.startswith(_STREAMS):
            return f"{cmd.name} runs code from {arg!r}, which this policy cannot see (like eval)"
        break
    return ""


def _assignment(node: Node) -> str:
    name = node.child_by_field_name("name")
    value = node.child_by_field_name("value")
    text = _text(node)
    if name is None:
        return text
    op = "+=" if "+=" in text[: len(_text(name)) + 2] else "="
    return _text(name) + op + (_word(value).value if value is not None else "")
