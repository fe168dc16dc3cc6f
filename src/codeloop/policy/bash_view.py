"""What bash's own lexer makes of a line, before the policy judges it.

tree-sitter-bash and bash disagree on details of the lexer: a backslash-newline inside a
word (``un\\⏎share``) is one word for bash and two for the grammar, so a blocked program, an
approval pattern or a protected path could be spelled past the policy. Rather than copying
bash's quoting rules, :func:`bash_normalize` asks bash itself: the line becomes the body of a
function and ``declare -f`` prints it back in bash's canonical form (continuations joined,
comments dropped, one command per line), which the grammar then reads the same way bash does.

Defining a function runs nothing, unless the line closes the function's brace itself
(``:; }; rm -rf ~; f() {``). So a line holding a ``}`` is read by bash in a throw-away
bubblewrap sandbox (the whole file system read-only, no network, its own process and IPC
namespaces, a time limit), and the function and a sentinel command at the end of its body
carry random names the line cannot know: when bash did not print exactly that one function
ending with that sentinel, the line escaped its body and is refused (``BashViewError``: the
caller asks). Without bubblewrap, such a line is refused the same way. A line without ``}``
cannot end the function early, so bash reads it directly: it can only define the function.

Lines made only of characters bash and the grammar read alike (letters, digits, spaces and
``-_./=:,@%+``) skip bash: that keeps the cost off most ordinary commands; the others cost one
bash (a few ms; with the sandbox, for a line holding ``}``, about 15 ms), cached per line.
"""

from __future__ import annotations

import re
import secrets
import shutil
import subprocess
from functools import lru_cache

BASH_TIMEOUT_S = 5.0
"""How long the normalizing bash may take before the line counts as undecidable."""

_PLAIN = re.compile(r"[A-Za-z0-9 _./=:,@%+-]*")
"""Lines whose words bash and tree-sitter split identically (no quoting, no expansion)."""

_SCRIPT = 'eval "$1" || exit 3; declare -F; declare -f "$2"'


class BashViewError(ValueError):
    """Raised when bash cannot show what it would run (not installed, a syntax error, a line
    that closes the function wrapped around it, or no answer in time)."""


def bash_normalize(line: str) -> str:
    """``line`` as bash's lexer reads it (see the module docstring); raise :class:`BashViewError`."""
    if _PLAIN.fullmatch(line):
        return line
    return _normalize(line)


@lru_cache(maxsize=1024)
def _normalize(line: str) -> str:
    bash = shutil.which("bash")
    if bash is None:
        raise BashViewError("bash is not installed, so what the line runs cannot be told")
    if "\0" in line:
        raise BashViewError("the line holds a NUL byte")
    token = secrets.token_hex(8)
    func, sentinel = f"__codeloop_body_{token}", f"__codeloop_end_{token}"
    program = f"{func}() {{\n{line}\n{sentinel}\n}}\n"
    argv = [bash, "--norc", "--noprofile", "-c", _SCRIPT, "bash", program, func]
    # Without a `}` of its own the line cannot end the function early, so bash only defines it
    # (`eval` runs the string one complete command at a time, and the first one is the whole
    # definition, or a syntax error): no sandbox is needed, which saves its start-up.
    bwrap = shutil.which("bwrap") if "}" in line else None
    if bwrap is not None:
        argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--tmpfs", "/tmp", "--unshare-all",
                "--die-with-parent", "--new-session", "--chdir", "/", "--clearenv",
                "--setenv", "PATH", "/usr/bin:/bin", "--", *argv]
    elif "}" in line:
        raise BashViewError("the line holds a '}' and no sandbox is available to read it with bash safely")
    try:
        done = subprocess.run(argv, input=b"", capture_output=True, timeout=BASH_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BashViewError(f"bash could not read the line ({type(exc).__name__})") from None
    out = done.stdout.decode("utf-8", "surrogateescape")
    if done.returncode != 0:
        why = done.stderr.decode("utf-8", "replace").strip().splitlines()
        detail = why[-1].split(": ", 1)[-1][:160] if why else f"exit {done.returncode}"
        raise BashViewError(f"bash cannot parse the line: {detail}")
    return _body(out, func, sentinel)


def _body(out: str, func: str, sentinel: str) -> str:
    """The function's body from ``declare -F; declare -f FUNC`` output, or raise when the line
    defined other functions or the sentinel is not its last command (it escaped the body)."""
    defined, _, printed = out.partition(f"{func} () \n")
    if defined.strip() != f"declare -f {func}":
        raise BashViewError("the line closes the function it is read in (a '}' of its own)")
    lines = printed.split("\n")
    # Printed as "{ ", the body, "}", "" (bash's fixed layout); the sentinel ends the body on a
    # line of its own, or after "& " when the line ends by putting a command in the background.
    if len(lines) < 4 or lines[0].rstrip() != "{" or lines[-2] != "}" or lines[-1] != "":
        raise BashViewError("the line closes the function it is read in (a '}' of its own)")
    body = re.fullmatch(rf"(.*?)(?:\n|(?<=&) ) *{sentinel}", "\n".join(lines[1:-2]), re.DOTALL)
    if body is None:
        raise BashViewError("the line closes the function it is read in (a '}' of its own)")
    return body.group(1)
