"""Places where bash evaluates text as code without a command the policy could judge.

Arithmetic evaluates the *value* of every variable it names as an expression again, and an
array subscript in that value runs its command substitutions: with ``x='a[$(rm -rf ~)]'``,
``(( x ))``, ``$((x))``, ``${a[$x]}``, ``[[ $x -eq 1 ]]``, ``let x``, ``declare -i n=x`` and
``test -v 'a[$x]'`` each run ``rm``. Prompt expansion (``${x@P}``) runs the substitutions of
a value too. :func:`code_context` finds these in a parsed line and says why, so the line is
judged like ``eval`` (it asks); an arithmetic context over numbers and special parameters
only (``$((1+2))``, ``[[ $# -eq 0 ]]``) is plain.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from tree_sitter import Node

SHELL_READ_VARIABLES = frozenset({
    "BASH_ENV", "ENV", "PS0", "PS1", "PS2", "PS4", "SHELLOPTS", "BASHOPTS", "PROMPT_COMMAND", "IFS",
    "CDPATH", "GLOBIGNORE", "BASH_XTRACEFD", "PERL5OPT", "PERL5DB", "RUBYOPT", "NODE_OPTIONS",
    "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "PYTHONSTARTUP", "PYTHONHOME", "GCONV_PATH",
    "GLIBC_TUNABLES", "LESSOPEN", "LESSCLOSE", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "GIT_EXEC_PATH",
    "GIT_TEMPLATE_DIR", "GIT_ASKPASS", "SSH_ASKPASS", "GIT_PROXY_COMMAND", "GIT_SSH", "GIT_DIR",
    "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "PERL5LIB", "RUBYLIB", "NODE_PATH", "BROWSER",
})
"""Variables that make a shell or a common program run code or read another configuration:
a value for one cannot be judged, so it asks."""
_SHELL_READ_PREFIXES = ("LD_", "DYLD_", "BASH_FUNC_", "GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_")


def names_code_variable(word: str) -> str:
    """The first variable of :data:`SHELL_READ_VARIABLES` (or its prefixes) that ``word``
    names as an identifier (``BASH_ENV``, ``x[0]=BASH_ENV``), or ``""``."""
    idents: list[str] = re.findall(r"[A-Za-z_][A-Za-z_0-9]*", word)
    return next((i for i in idents if i in SHELL_READ_VARIABLES or i.startswith(_SHELL_READ_PREFIXES)), "")


_ARITH_TEST_OPS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})
_PLAIN_ARITH = re.compile(r"(?:[\s0-9+\-*/%<>=!&|^~?:(),#]|\$[#?$!0-9]|\$\{[#?$!0-9]\})*")
"""Arithmetic over numbers, operators and special parameters only: it names no variable."""
_DECLARE_ARITH = re.compile(r"-[a-zA-Z]*[iaA]")


def code_context(root: Node, text: Callable[[Node], str]) -> str:
    """Why ``root`` (a tree-sitter-bash tree) evaluates text as code, or ``""``."""
    todo = [root]
    while todo:
        node = todo.pop()
        why = _judge(node, text)
        if why:
            return why
        todo.extend(node.children)
    return ""


def _arith(expr: str, where: str) -> str:
    if _PLAIN_ARITH.fullmatch(expr):
        return ""
    return (f"{where} evaluates {expr.strip()[:60]!r} as arithmetic, which runs the command "
            "substitutions of any variable it names (like eval)")


def _judge(node: Node, text: Callable[[Node], str]) -> str:
    kind = node.type
    if kind in ("for_statement", "select_statement"):
        var = node.child_by_field_name("variable")
        if var is not None and names_code_variable(text(var)):
            return f"the loop sets {text(var)}, which makes the shell or a program run code"
    if kind == "arithmetic_expansion":
        return _arith(text(node)[3:-2], "$((...))")
    if kind == "c_style_for_statement":
        head = text(node)
        return _arith(head[head.find("((") + 2:head.find("))")], "for ((...))")
    if kind == "compound_statement" and text(node).startswith("(("):
        return _arith(text(node)[2:-2], "((...))")
    if kind == "subscript":
        index = node.child_by_field_name("index")
        value = text(index) if index is not None else ""
        return "" if value in ("@", "*") else _arith(value, "an array subscript")
    if kind == "expansion":
        return _expansion(node, text)
    if kind == "binary_expression":
        op = next((c for c in node.children if c.type == "test_operator"), None)
        if op is not None and text(op) in _ARITH_TEST_OPS:
            return _arith(" ".join(text(c) for c in node.children if c is not op), f"[[ ... {text(op)} ... ]]")
    if kind == "unary_expression":
        op = next((c for c in node.children if c.type == "test_operator"), None)
        if op is not None and text(op) == "-v":
            return "a -v test evaluates an array subscript of the name it tests (like eval)"
    if kind == "command":
        return _command(node, text)
    if kind == "declaration_command":
        words = [text(c) for c in node.children[1:] if c.type == "word"]
        if any(_DECLARE_ARITH.match(w) for w in words) and node.named_children:
            assigned = [c for c in node.named_children if c.type == "variable_assignment"]
            for a in assigned:
                rhs = a.child_by_field_name("value")
                why = _arith(text(rhs) if rhs is not None else "", "declare -i/-a")
                if why:
                    return why
        if any(w.startswith("-") and "n" in w[1:] for w in words):
            return "declare -n makes a name refer to another variable, which cannot be followed"
    return ""


def _expansion(node: Node, text: Callable[[Node], str]) -> str:
    raw = text(node)
    if raw.endswith("@P}"):
        return "the prompt expansion ${...@P} runs the command substitutions of a value (like eval)"
    # ${x:OFFSET:LENGTH}: both are arithmetic (the ':-', ':=', ':?', ':+' forms are not).
    m = re.fullmatch(r"\$\{[#!]?\w+(?:\[[^]]*\])?:([^-=?+].*)\}", raw, re.DOTALL)
    if m:
        return _arith(m.group(1), "a substring expansion")
    return ""


def _command(node: Node, text: Callable[[Node], str]) -> str:
    words = [text(c) for c in node.named_children if c.type in ("command_name", "word", "string", "raw_string",
                                                                 "number", "concatenation", "simple_expansion",
                                                                 "expansion")]
    if not words:
        return ""
    name = words[0]
    if name == "let":
        return next((w for w in (_arith(a, "let") for a in words[1:]) if w), "")
    if name in ("test", "[") and "-v" in words[1:]:
        return "test -v evaluates an array subscript of the name it tests (like eval)"
    if name in ("mapfile", "readarray") and any(w.startswith("-") and "C" in w for w in words[1:]):
        return f"{name} -C runs a callback given as text (like eval)"
    return ""
