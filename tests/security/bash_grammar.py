"""A hypothesis grammar of command lines for the differential harness (issue 31).

Lines are sequences of one to three statements (``;``, ``&&``, ``||``, ``|``); a statement is a
simple command over a small workspace (programs that read, write, delete, link, chmod; paths
that are ordinary, protected, reached through ``/proc/self/cwd`` or after a ``cd``) with
redirections, or that command inside a wrapper (``timeout``, ``env``, ``nice``, ``xargs``,
``sh -c``, ``flock -c``), fed to a shell as text (``source <(...)``, ``. /dev/stdin <<<``,
``bash < <(...)``, ``mapfile -C``, ``${x@P}``, arithmetic), run after ``BASH_ENV`` is set in
one of its ways, after a ``cd``, or a git command (settings naming programs, destructive
commands, ordinary ones). Every word may be spelled with quotes, backslashes and
backslash-newline continuations. Each line carries the tags of the productions it used, so a
run can tell which class a disagreement belongs to (:data:`CLASSES`).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from hypothesis import strategies as st

CLASSES = ("continuation", "code-fed-to-a-shell", "bash-env", "working-directory", "git-config",
           "destructive-git", "wrapper-command-string")
"""The public classes of issue 31, as production tags."""


@dataclass(frozen=True)
class Line:
    text: str
    tags: frozenset[str]


_PROGRAMS = {
    "cat": ["a.txt", "d/f.txt", ".env", "/proc/self/cwd/.env", "config", "src/x.py"],
    "touch": ["new.txt", "d/new", "x", "hooks/pre-commit", ".git/hooks/pre-commit", "pre-commit"],
    "rm": ["-f new.txt", "-rf d", "a.txt", "-f x", "-f config"],
    "ls": ["-la", "d", "src", ".git"],
    "wc": ["-l a.txt", "-c src/x.py"],
    "head": ["-n 1 a.txt", "-1 tracked.txt"],
    "mkdir": ["-p d/e", "new"],
    "chmod": ["+x a.txt", "644 d/f.txt", "+x hooks/pre-commit"],
    "cp": ["a.txt b.txt", "a.txt config", "env.sh hooks/pre-commit"],
    "mv": ["a.txt b.txt", "d/f.txt d/g.txt"],
    "ln": ["-s a.txt l", "-sf env.sh hooks/post-commit"],
    "printf": ["'%s\\n' hi", "x"],
    "true": [""],
    "tee": ["out.txt", "config"],
}
_TARGETS = ["out.txt", "d/o.txt", "config", "hooks/pre-commit", ".git/hooks/pre-commit", "/proc/self/cwd/.git/config",
            "/dev/null", ".env"]
_DIRS = [".git", ".git/hooks", "d", "src", "/proc/self/cwd/.git", ".git/hooks/../"]
_GIT_KEYS_PROGRAM = ["core.fsmonitor", "gpg.program", "difftool.x.cmd", "core.pager", "alias.x", "core.editor",
                     "include.path", "core.sshCommand", "filter.x.clean"]
_GIT_KEYS_DATA = ["user.name", "user.email", "color.ui"]
_GIT_DESTRUCTIVE = ["checkout -- .", "checkout .", "restore .", "stash clear", "stash drop", "reset --hard",
                    "reset -q --hard", "clean -fd", "clean -f", "branch -D keep", "checkout -f main"]
_GIT_ORDINARY = ["status --short", "log --oneline -1", "diff --stat", "add a.txt", "branch", "show --stat HEAD",
                 "rev-parse HEAD"]


@st.composite
def spelled(draw: st.DrawFn, word: str, tags: set[str]) -> str:
    """``word`` as bash reads it, written one of several ways."""
    if not word:
        return word
    how = draw(st.sampled_from(["plain", "plain", "single", "double", "split", "backslash", "continuation"]))
    if how == "plain" or any(c in word for c in "'\"\\$`*?[]{}()<>|&;! \n"):
        return word
    if how == "single":
        return f"'{word}'"
    if how == "double":
        return f'"{word}"'
    at = draw(st.integers(1, len(word))) if len(word) > 1 else 1
    head, tail = word[:at], word[at:]
    if how == "split":
        return f"'{head}'\"{tail}\"" if tail else f"'{head}'"
    if how == "backslash":
        return head[:-1] + "\\" + head[-1] + tail
    tags.add("continuation")
    quoted = draw(st.booleans())
    return f'"{head}\\\n{tail}"' if quoted else f"{head}\\\n{tail}"


@st.composite
def simple(draw: st.DrawFn, tags: set[str], spell: bool = True) -> str:
    prog = draw(st.sampled_from(sorted(_PROGRAMS)))
    args = draw(st.sampled_from(_PROGRAMS[prog])).split()
    words = [prog, *args]
    if spell:
        words = [draw(spelled(w, tags)) for w in words]
    text = " ".join(w for w in words if w)
    if draw(st.integers(0, 3)) == 0:
        # Expansions and substitutions: the policy cannot know these words; it must still see
        # the program and judge the rest.
        text += " " + draw(st.sampled_from(["$x", '"$HOME"', "$(echo a.txt)", "`printf d/f.txt`", "*.txt", "d/*",
                                            "{a,b}.txt", "${x:-a.txt}", "<(echo a)", "$((1+2))"]))
    if draw(st.integers(0, 3)) == 0:
        op = draw(st.sampled_from([">", ">>", "2>"]))
        target = draw(st.sampled_from(_TARGETS))
        text += f" {op} {draw(spelled(target, tags)) if spell else target}"
    return text


@st.composite
def wrapped(draw: st.DrawFn, tags: set[str]) -> str:
    inner = draw(simple(tags, spell=False))
    form = draw(st.sampled_from(["timeout", "env", "nice", "sh", "bash", "flock", "xargs", "command"]))
    if form in ("sh", "bash"):
        return f"{form} -c {shlex.quote(inner)}"
    if form == "flock":
        tags.add("wrapper-command-string")
        return f"flock /tmp/lock -c {shlex.quote(inner)}"
    prefix = {"timeout": "timeout 5", "env": "env X=1", "nice": "nice -n 1", "xargs": "xargs", "command": "command"}[form]
    return f"{prefix} {inner}"


@st.composite
def fed(draw: st.DrawFn, tags: set[str]) -> str:
    tags.add("code-fed-to-a-shell")
    inner = draw(simple(tags, spell=False))
    q = shlex.quote(inner)
    form = draw(st.integers(0, 7))
    return [
        f"source <(echo {q})",
        f". /dev/stdin <<< {q}",
        f"bash < <(echo {q})",
        f"sh <<< {q}",
        f"mapfile -C {shlex.quote(inner + '; :')} -c 1 arr <<< x",
        f"x={shlex.quote('$(' + inner + ')')}; echo ${{x@P}} >/dev/null",
        f"x={shlex.quote('a[$(' + inner + ')]')}; (( x )); true",
        f"x={shlex.quote('a[$(' + inner + ')]')}; echo $(( x + 1 )) >/dev/null",
    ][form]


@st.composite
def bash_env(draw: st.DrawFn, tags: set[str]) -> str:
    tags.add("bash-env")
    sets = draw(st.sampled_from([
        "BASH_ENV=env.sh bash -c :",
        "export BASH_ENV=env.sh; bash -c :",
        "BASH_ENV+=env.sh; export BASH_ENV; bash -c :",
        "printf -v BASH_ENV %s env.sh; export BASH_ENV; bash -c :",
        "read BASH_ENV <<< env.sh; export BASH_ENV; bash -c :",
        "declare -n r=BASH_ENV; r=env.sh; export BASH_ENV; bash -c :",
        "for BASH_ENV in env.sh; do export BASH_ENV; bash -c :; done",
    ]))
    return sets


@st.composite
def in_dir(draw: st.DrawFn, tags: set[str]) -> str:
    tags.add("working-directory")
    where = draw(st.sampled_from(_DIRS))
    how = draw(st.sampled_from(["cd {} && {}", "cd {}; {}", "pushd {} >/dev/null; {}"]))
    then = draw(st.sampled_from(["echo x > hooks/pre-commit", "echo x > config", "touch pre-commit",
                                 "echo x >> ../config", "cp ../env.sh hooks/pre-commit", "ln -sf x post-commit", "ls"]))
    return how.format(draw(spelled(where, tags)), then)


@st.composite
def git(draw: st.DrawFn, tags: set[str], programs_only: bool = False) -> str:
    kind = draw(st.sampled_from(["config", "dash-c", "env", "destructive", "ordinary", "ordinary"]))
    if kind == "ordinary":
        return "git " + draw(st.sampled_from(_GIT_ORDINARY))
    if kind == "destructive":
        tags.add("destructive-git")
        return "git " + draw(st.sampled_from(_GIT_DESTRUCTIVE))
    tags.add("git-config")
    key = draw(st.sampled_from(_GIT_KEYS_PROGRAM + ([] if programs_only else _GIT_KEYS_DATA)))
    value = "!touch d/alias" if key.startswith("alias.") else "touch d/prog"
    use = "x" if key.startswith("alias.") else "-p log -1" if key == "core.pager" else "status --short"
    if kind == "config":
        # then a git command that may run what the setting names (a pager, an alias, ...)
        return f"git config {key} {shlex.quote(value)} && git {use}"
    if kind == "dash-c":
        return f"git -c {shlex.quote(key + '=' + value)} {use}"
    return f"GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0={key} GIT_CONFIG_VALUE_0={shlex.quote(value)} git {use}"


@st.composite
def statement(draw: st.DrawFn, tags: set[str], require: str | None = None) -> str:
    makers = {
        "simple": simple, "wrapped": wrapped, "fed": fed, "bash-env": bash_env, "dir": in_dir, "git": git,
    }
    if require == "code-fed-to-a-shell":
        return draw(fed(tags))
    if require == "bash-env":
        return draw(bash_env(tags))
    if require == "working-directory":
        return draw(in_dir(tags))
    if require in ("git-config", "destructive-git"):
        while True:
            text = draw(git(tags, programs_only=True))
            if require in tags:
                return text
    if require == "wrapper-command-string":
        while True:
            text = draw(wrapped(tags))
            if require in tags:
                return text
    weights = ["simple"] * 5 + ["wrapped"] * 3 + ["git"] * 3 + ["dir"] * 2 + ["fed", "bash-env"]
    return draw(makers[draw(st.sampled_from(weights))](tags))


@st.composite
def lines(draw: st.DrawFn, require: str | None = None) -> Line:
    """A command line and the tags of its productions; ``require``: a class it must hold."""
    tags: set[str] = set()
    count = draw(st.integers(1, 3))
    first = draw(st.integers(0, count - 1))
    parts = [draw(statement(tags, require if i == first else None)) for i in range(count)]
    if require == "continuation" and "continuation" not in tags:
        parts[0] = draw(_continued(parts[0]))
        tags.add("continuation")
    text = parts[0]
    if draw(st.integers(0, 4)) == 0:
        text = draw(st.sampled_from(["x=a.txt; ", "x=.env; ", "export x=d; ", "x=$(ls); "])) + text
    for part in parts[1:]:
        text += draw(st.sampled_from(["; ", " && ", " || ", "\n"])) + part
    return Line(text, frozenset(tags))


@st.composite
def _continued(draw: st.DrawFn, text: str) -> str:
    """``text`` with a backslash-newline inside its first word."""
    word, _, rest = text.partition(" ")
    if len(word) < 2 or any(c in word for c in "'\"\\$=<>"):
        return text
    at = draw(st.integers(1, len(word) - 1))
    return f"{word[:at]}\\\n{word[at:]}" + (f" {rest}" if rest else "")
