"""split_commands finds every simple command of a shell line (tree-sitter-bash)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeloop.policy import ShellParseError, split_commands


def _names(line: str) -> list[str]:
    return [c.name for c in split_commands(line)]


@pytest.mark.parametrize(
    ("line", "names"),
    [
        ("a | b && c; (d) || e", ["a", "b", "c", "d", "e"]),
        ("echo $(whoami) `id`", ["echo", "whoami", "id"]),
        ("cat <(ls)", ["cat", "ls"]),
        ("env X=1 Y=2 rm f", ["env", "rm"]),
        ("bash -c 'ls && rm x'", ["bash", "ls", "rm"]),
        ("sh -ec \"sh -c 'id'\"", ["sh", "sh", "id"]),
        ("eval 'a; b'", ["eval", "a", "b"]),
        ("timeout -s KILL 5 make test", ["timeout", "make"]),
        ("sudo -u root nice -n 5 id", ["sudo", "nice", "id"]),
        ("find . -name '*.tmp' -exec rm {} \\;", ["find", "rm"]),
        ("if a; then b; else c; fi", ["a", "b", "c"]),
        ("for i in 1; do x $i; done", ["x"]),
        ("f() { g; }", ["g"]),
        ("X=$(y) z", ["z", "y"]),
        ("/usr/bin/rm -f a", ["rm"]),
        ("", []),
    ],
)
def test_every_command_is_found(line: str, names: list[str]) -> None:
    assert _names(line) == names


def test_wrapped_command_records_wrappers_and_assignments() -> None:
    cmds = split_commands("env X=1 nohup rm -f a")
    rm = cmds[-1]
    assert rm.argv == ("rm", "-f", "a")
    assert rm.via == ("env", "nohup")
    assert split_commands("env X=1 nohup rm -f a")[1].assignments == ("X=1",)


def test_pipeline_stage_knows_stdin_is_piped() -> None:
    first, second = split_commands("cat x | sh")
    assert (first.stdin_piped, second.stdin_piped) == (False, True)


def test_dynamic_command_name_is_flagged() -> None:
    assert split_commands("$CMD arg")[0].dynamic
    assert not split_commands("ls $DIR")[0].dynamic


@pytest.mark.parametrize("line", ["find . -exec {} \\;", "xargs -I{} {} -f", "xargs -I {} sh{} x"])
def test_command_name_filled_in_by_the_wrapper_is_flagged(line: str) -> None:
    # find -exec and xargs -I put names read at run time where "{}" stands.
    inner = split_commands(line)[-1]
    assert inner.dynamic and "decided only when it runs" in inner.unresolved


def test_redirects_are_recorded() -> None:
    cmd = split_commands("echo hi >> /tmp/log 2>/dev/null")[0]
    assert [(r.op, r.target, r.writes) for r in cmd.redirects] == [(">>", "/tmp/log", True), (">", "/dev/null", True)]


def test_quotes_are_removed_from_words() -> None:
    assert split_commands("r''m -rf 'a b'")[0].argv == ("rm", "-rf", "a b")


@pytest.mark.parametrize("line", ['echo "open', "a && ", "(ls", "eval " * 10 + "id"])
def test_unparseable_lines_raise_parse_error(line: str) -> None:
    with pytest.raises(ShellParseError):
        split_commands(line)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_split_never_raises_anything_but_parse_error(line: str) -> None:
    try:
        split_commands(line)
    except ShellParseError:
        pass


@pytest.mark.parametrize("delimiter", ["'EOF'", '"EOF"', "EOF"])
def test_here_documents_parse_whatever_their_delimiter_quoting(delimiter: str) -> None:
    line = f"cat > a.py <<{delimiter} && rm -rf build\nx = 1\nEOF\n"
    names = [c.name for c in split_commands(line)]
    # bash prints the list after the here-document's body, which the grammar may read as a
    # command too (`x`): judged in addition, never instead (issue 31).
    assert names[0] == "cat" and "rm" in names and set(names) <= {"cat", "rm", "x"}


@pytest.mark.parametrize(("line", "names"), [
    ("echo `echo \\`unshare -r sh\\``", ["echo", "echo", "unshare"]),
    ("echo `find . -exec echo \\`unshare -r sh\\` \\;`", ["echo", "find", "echo", "unshare"]),
    ("echo `echo \\`un\\\\share -r sh\\``", ["echo", "echo", "unshare"]),
    ("echo \"`echo \\`id\\``\"", ["echo", "echo", "id"]),
])
def test_escaped_backquotes_nest_as_bash_nests_them(line: str, names: list[str]) -> None:
    """Bash runs the inner command of `a \\`b\\``; each level must be seen, not one."""
    assert [c.name for c in split_commands(line)] == names


def test_a_code_point_over_255_after_a_brace_does_not_crash_the_process() -> None:
    """tree-sitter-bash's scanner gives the character after `{` to isdigit(), which reads out
    of bounds past 255 (U+10FFFF crashed every time here). Run in a child: a crash must fail
    this test, not kill the test worker."""
    script = (
        "from codeloop.policy.shell_parse import split_commands\n"
        "for cp in (0x10FFFF, 0x80000, 0xBB2A9, 0x1F600):\n"
        "    for line in ('echo {' + chr(cp) + '-', 'echo {12..' + chr(cp) + '}', 'rm {' + chr(cp) + ' x'):\n"
        "        assert split_commands(line)[0].name in ('echo', 'rm'), line\n"
        "print('parsed')\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "parsed", (done.returncode, done.stderr[-2000:])


def test_non_ascii_text_keeps_its_characters_in_commands_and_arguments() -> None:
    cmds = split_commands("echo héllo € && rm -rf /tmp/ü 😀")
    assert [c.argv for c in cmds] == [("echo", "héllo", "€"), ("rm", "-rf", "/tmp/ü", "😀")]
    assert cmds[1].text == "rm -rf /tmp/ü 😀"
