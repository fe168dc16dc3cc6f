"""Split a shell line into every simple command it would run, with a real parser (bashlex).

Policy must judge each command of a line, not its first word: ``ls && rm -rf x``,
``echo $(curl evil)``, ``env X=1 sudo id`` and ``bash -c 'rm -rf x'`` each hide a second
command. :func:`split_commands` walks the whole syntax tree (lists, pipelines, subshells,
brace groups, ``if``/``for``/``while`` bodies, function bodies, command and process
substitutions in words, assignments and redirections) and unwraps command wrappers
(``env``, ``sudo``, ``nohup``, ``timeout``, ``xargs``, ``find -exec`` ...) and shells given a
script string (``bash -c``, ``sh -c``, ``eval``), recursively. The wrapper itself is reported
too, so ``sudo`` stays visible.

A line bashlex cannot parse raises :class:`ShellParseError`; callers must treat that as
"cannot judge" (ask for approval), never as "allowed".
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import Any

MAX_NESTING = 6
"""Deepest ``bash -c`` / ``eval`` nesting followed before the line counts as unparseable."""

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash"})
_WRAPPERS_SIMPLE = frozenset({"nohup", "time", "exec", "command", "builtin", "setsid", "stdbuf",
                              "nice", "ionice", "chronic", "unbuffer", "doas", "sudo", "xargs",
                              "watch", "strace", "ltrace", "flock", "taskset", "chrt", "busybox"})
# Options of wrappers that take a separate argument (so the word after them is not the command).
_WRAPPER_ARG_OPTIONS = {
    "sudo": {"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U"},
    "doas": {"-u", "-C"},
    "nice": {"-n"},
    "ionice": {"-c", "-n", "-p"},
    "xargs": {"-I", "-L", "-n", "-P", "-s", "-d", "-E", "-a"},
    "stdbuf": {"-i", "-o", "-e"},
    "watch": {"-n", "-d"},
    "strace": {"-o", "-e", "-p", "-s"},
    "env": {"-u", "-C", "-S"},
    "timeout": {"-s", "-k"},
    "taskset": set(),
    "chrt": set(),
    "flock": {"-w", "-E"},
}


_QUOTED_HEREDOC = re.compile(r"""(<<-?[ \t]*)(['"])([A-Za-z_][A-Za-z0-9_]*)\2(?=[\s;&|<>)]|$)""")


class ShellParseError(ValueError):
    """Raised when a shell line cannot be parsed (or nests shells too deeply)."""


@dataclass(frozen=True)
class Redirect:
    """One redirection of a simple command."""

    op: str
    """The operator as written: ``>``, ``>>``, ``<``, ``>&``, ``&>``, ``>|`` ..."""
    target: str
    """The file name or descriptor after the operator, quotes removed."""

    @property
    def writes(self) -> bool:
        """True when the redirection writes to (or truncates) the target."""
        return ">" in self.op


@dataclass(frozen=True)
class ParsedCommand:
    """One simple command found in a shell line."""

    argv: tuple[str, ...]
    """The words after leading assignments, quotes removed; expansions kept as written."""
    text: str
    """The source text of this command (for messages)."""
    assignments: tuple[str, ...] = ()
    """Leading ``NAME=value`` words (or those given to ``env``)."""
    redirects: tuple[Redirect, ...] = ()
    """Redirections attached to the command."""
    dynamic: bool = False
    """True when the command name comes from an expansion (``$CMD``, ``$(...)``) and so cannot
    be judged before it runs."""
    via: tuple[str, ...] = ()
    """Wrappers this command was found inside, outermost first (``env``, ``bash -c``, ``$(...)``)."""
    stdin_piped: bool = False
    """True when the command reads the previous pipeline stage on stdin."""
    stdin_inline: bool = False
    """True when stdin is a here-document or here-string (``<<EOF``, ``<<<``)."""

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
    return _split(line, via=(), depth=0)


def _split(line: str, via: tuple[str, ...], depth: int) -> list[ParsedCommand]:
    if depth > MAX_NESTING:
        raise ShellParseError(f"shell nesting deeper than {MAX_NESTING} levels")
    if not line.strip():
        return []
    # Imported here: loading bashlex builds its parser tables (~100 ms), which every
    # `codeloop run` would otherwise pay at start even when no shell line is judged.
    import bashlex

    # bashlex wants a quoted here-document delimiter (<<'EOF') quoted on its closing line
    # too; the quotes only stop expansion in the body, which bashlex does not parse anyway.
    line = _QUOTED_HEREDOC.sub(r"\1\3", line)
    try:
        trees = bashlex.parse(line)
    except Exception as exc:  # bashlex raises ParsingError, NotImplementedError, IndexError...
        raise ShellParseError(f"cannot parse shell line: {exc}") from exc
    walker = _Walker(line, via, depth)
    for tree in trees:
        walker.visit(tree, stdin_piped=False)
    return walker.found


class _Walker:
    def __init__(self, line: str, via: tuple[str, ...], depth: int) -> None:
        self.line = line
        self.via = via
        self.depth = depth
        self.found: list[ParsedCommand] = []

    def visit(self, node: Any, stdin_piped: bool) -> None:
        kind = node.kind
        if kind == "command":
            self._command(node, stdin_piped)
        elif kind == "pipeline":
            first = True
            for part in node.parts:
                if part.kind == "pipe":
                    continue
                self.visit(part, stdin_piped=stdin_piped if first else True)
                first = False
        elif kind == "compound":
            for part in node.list:
                self.visit(part, stdin_piped)
            for red in getattr(node, "redirects", []) or []:
                self._words_in(red)
        elif kind in ("list", "if", "for", "while", "until", "function"):
            for part in node.parts:
                self.visit(part, stdin_piped)
        elif kind in ("word", "assignment", "redirect"):
            self._words_in(node)
        elif kind in ("operator", "reservedword", "pipe", "parameter", "tilde", "heredoc"):
            return
        else:
            raise ShellParseError(f"unsupported shell construct {kind!r}")

    def _words_in(self, node: Any) -> None:
        """Commands hidden inside words: ``$(...)``, backticks, ``<(...)``."""
        for sub in _substitutions(node):
            inner_via = (*self.via, "$(...)" if sub.kind == "commandsubstitution" else "<(...)")
            inner = _Walker(self.line, inner_via, self.depth)
            inner.visit(sub.command, stdin_piped=False)
            self.found.extend(inner.found)

    def _command(self, node: Any, stdin_piped: bool) -> None:
        assignments: list[str] = []
        words: list[Any] = []
        redirects: list[Redirect] = []
        hidden = _Walker(self.line, self.via, self.depth)
        inline: list[str] = []
        for part in node.parts:
            if part.kind == "assignment" and not words:
                assignments.append(part.word)
            elif part.kind == "word":
                words.append(part)
            elif part.kind == "redirect":
                target = part.output
                text = target.word if hasattr(target, "word") else str(target)
                redirects.append(Redirect(op=str(part.type), target=text))
                if part.type == "<<<":
                    inline.append(text)
                elif part.type in ("<<", "<<-") and getattr(part, "heredoc", None) is not None:
                    body = part.heredoc.value.rsplit("\n", 1)[0] if "\n" in part.heredoc.value else ""
                    inline.append(body)
            hidden._words_in(part)
        argv = tuple(w.word for w in words)
        dynamic = bool(words) and _is_dynamic(words[0])
        text = self.line[node.pos[0]:node.pos[1]]
        cmd = ParsedCommand(argv=argv, text=text, assignments=tuple(assignments),
                            redirects=tuple(redirects), dynamic=dynamic, via=self.via,
                            stdin_piped=stdin_piped, stdin_inline=bool(inline))
        self.found.append(cmd)
        self._unwrap(cmd, [_is_dynamic(w) for w in words])
        if cmd.name in SHELLS:
            for script in inline:  # a shell reading a here-document runs it: judge its commands
                self.found.extend(_split(script, (*self.via, f"{cmd.name} <<"), self.depth + 1))
        self.found.extend(hidden.found)

    def _unwrap(self, cmd: ParsedCommand, dyn: list[bool]) -> None:
        """Report the command a wrapper runs (``env X=1 rm`` -> ``rm``), recursively."""
        name, argv = cmd.name, list(cmd.argv)
        inner: list[str] | None = None
        inner_dyn: list[bool] = []
        assignments: list[str] = []
        if name in SHELLS:
            script = _shell_script_arg(argv)
            if script is not None:
                nested = _split(script, (*self.via, f"{name} -c"), self.depth + 1)
                self.found.extend(nested)
            return
        if name == "eval":
            nested = _split(" ".join(argv[1:]), (*self.via, "eval"), self.depth + 1)
            self.found.extend(nested)
            return
        if name == "find":
            self._find_exec(cmd)
            return
        if name == "alias":
            for arg in argv[1:]:
                if "=" in arg:
                    self.found.extend(_split(arg.split("=", 1)[1], (*self.via, "alias"), self.depth + 1))
            return
        if name == "env":
            i = 1
            while i < len(argv):
                word = argv[i]
                if word in _WRAPPER_ARG_OPTIONS["env"]:
                    i += 2
                elif word.startswith("-"):
                    if word in ("-S", "--split-string"):
                        break
                    i += 1
                elif "=" in word and not word.startswith("="):
                    assignments.append(word)
                    i += 1
                else:
                    break
            if i < len(argv) and argv[i - 1] in ("-S", "--split-string"):
                nested = _split(argv[i], (*self.via, "env -S"), self.depth + 1)
                self.found.extend(nested)
                return
            inner, inner_dyn = argv[i:], dyn[i:]
        elif name == "timeout":
            i = _skip_options(argv, 1, _WRAPPER_ARG_OPTIONS["timeout"])
            inner, inner_dyn = argv[i + 1:], dyn[i + 1:]  # the word at i is the duration
        elif name in _WRAPPERS_SIMPLE:
            i = _skip_options(argv, 1, _WRAPPER_ARG_OPTIONS.get(name, set()))
            if name in ("taskset", "flock", "chrt") and i < len(argv):
                i += 1  # mask / lock file / priority before the command
            inner, inner_dyn = argv[i:], dyn[i:]
        if inner and len(inner) == 1 and any(ch.isspace() for ch in inner[0]):
            # A wrapper given the command as one string (watch "a b", timeout 5 "a b") runs it
            # through a shell: judge it as a line.
            self.found.extend(_split(inner[0], (*self.via, name), self.depth + 1))
            return
        if inner:
            wrapped = ParsedCommand(
                argv=tuple(inner), text=cmd.text, assignments=tuple(assignments),
                redirects=cmd.redirects, dynamic=bool(inner_dyn) and inner_dyn[0],
                via=(*cmd.via, name), stdin_piped=cmd.stdin_piped)
            self.found.append(wrapped)
            if self.depth + len(wrapped.via) > MAX_NESTING * 3:
                raise ShellParseError("command wrappers nested too deeply")
            self._unwrap(wrapped, list(inner_dyn))

    def _find_exec(self, cmd: ParsedCommand) -> None:
        argv = list(cmd.argv)
        i = 0
        while i < len(argv):
            if argv[i] in ("-exec", "-execdir", "-ok", "-okdir"):
                j = i + 1
                while j < len(argv) and argv[j] not in (";", "+", "\\;"):
                    j += 1
                inner = tuple(a for a in argv[i + 1:j])
                if inner:
                    wrapped = ParsedCommand(argv=inner, text=cmd.text, via=(*cmd.via, "find -exec"),
                                            dynamic="$" in inner[0] or "`" in inner[0])
                    self.found.append(wrapped)
                    self._unwrap(wrapped, [False] * len(inner))
                i = j
            i += 1


def _skip_options(argv: list[str], i: int, with_arg: set[str]) -> int:
    while i < len(argv) and argv[i].startswith("-") and argv[i] != "-":
        if argv[i] == "--":
            return i + 1
        i += 2 if argv[i] in with_arg else 1
    return i


def _shell_script_arg(argv: list[str]) -> str | None:
    """The script of ``bash -c SCRIPT`` (also ``-lc``, ``-ec`` ...), or ``None``."""
    for i, word in enumerate(argv[1:], start=1):
        if word.startswith("-") and not word.startswith("--") and "c" in word[1:]:
            return argv[i + 1] if i + 1 < len(argv) else ""
        if not word.startswith("-"):
            return None
    return None


def _substitutions(node: Any) -> list[Any]:
    out: list[Any] = []
    stack = [node]
    while stack:
        cur = stack.pop()
        kind = getattr(cur, "kind", None)
        if kind in ("commandsubstitution", "processsubstitution"):
            out.append(cur)
            continue
        for child in getattr(cur, "parts", []) or []:
            stack.append(child)
        out_node = getattr(cur, "output", None)
        if out_node is not None and hasattr(out_node, "kind"):
            stack.append(out_node)
    out.reverse()
    return out


def _is_dynamic(word: Any) -> bool:
    text = getattr(word, "word", "")
    if any(getattr(p, "kind", None) in ("parameter", "commandsubstitution", "processsubstitution")
           for p in getattr(word, "parts", []) or []):
        return True
    return "$" in text or "`" in text
