"""Each public class of issue 31 ("the policy sees what bash runs"), one test each.

Every line here ran a guarded action under ``standard`` at 51cb17f (the policy the issue was
filed against); each is now asked about (or refused), while ordinary work still runs: the
ordinary corpus (tests/security/test_policy_fails_closed.py) and the benchmark corpus below.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from codeloop.policy import bash_view, evaluate_command, is_read_only_line, judge_line, preset, split_commands
from codeloop.policy.bash_view import BashViewError, bash_normalize

STANDARD = preset("standard")
HERE = Path(__file__).parent


def _standard(line: str) -> str:
    return evaluate_command(line, STANDARD.shell, STANDARD.network).action


def _not_allowed(lines: list[str]) -> list[str]:
    return [line for line in lines if _standard(line) == "allow"]


def test_a_backslash_newline_inside_a_word_is_read_as_bash_reads_it() -> None:
    assert _standard("un\\\nshare -r sh") == "deny"
    assert _not_allowed(["r\\\nm -rf d", "cat .e\\\nnv", "echo x > .git/ho\\\noks/pre-commit",
                         'echo x > ".git/ho\\\noks/pre-commit"', "git reset --ha\\\nrd"]) == []
    # the read-only list behind `--approval on-risk` and `spaces serve --no-sandbox`
    assert not is_read_only_line('tr\\\nap "touch x" EXIT')
    assert [c.argv for c in split_commands("ec\\\nho a\\\nb 'c\\\nd'")] == [("echo", "ab", "c\\\nd")]


@pytest.mark.parametrize("line", [
    "source <(echo 'touch x')", ". <(echo 'touch x')", ". /dev/stdin <<< 'touch x'", "source /dev/fd/3 3<<< 'touch x'",
    "bash < <(echo 'touch x')", "sh /dev/stdin <<< 'touch x'", "python3 <(echo 'print(1)')", "bash <(echo id)",
    "mapfile -C 'touch x; :' -c 1 a <<< y", "readarray -C cb a < a.txt",
    "x='$(touch x)'; echo ${x@P}",
    "x='a[$(touch x)]'; (( x ))", "echo $(( x + 1 ))", "let y=x", "declare -i n=x", "test -v 'a[$x]'",
    "[[ -v a[$x] ]]", "[[ $x -eq 1 ]]", "echo ${a[$x]}", "for (( i = x; i < 2; i++ )); do :; done",
    "echo ${s:$x:1}",
])
def test_code_fed_to_a_shell_or_evaluated_as_text_asks_like_eval(line: str) -> None:
    assert _standard(line) == "ask", line


def test_arithmetic_over_numbers_alone_stays_allowed() -> None:
    assert _standard("echo $((1 + 2)) ${#a[@]}") == "allow"
    assert _standard('[[ $# -eq 0 ]] && echo none') == "allow"


@pytest.mark.parametrize("line", [
    "BASH_ENV+=env.sh bash -c :", "BASH_ENV=env.sh; export BASH_ENV; bash -c :", "export BASH_ENV",
    "printf -v BASH_ENV %s env.sh; export BASH_ENV; bash -c :", "read BASH_ENV <<< env.sh",
    "declare -n r=BASH_ENV; r=env.sh", "for BASH_ENV in env.sh; do bash -c :; done", "read -r ENV < f",
    "declare -x BASH_ENV=env.sh", "printf -v \"$n\" %s env.sh", "mapfile -t BASH_ENV < f", "getopts a BASH_ENV",
])
def test_bash_env_set_by_any_means_asks(line: str) -> None:
    assert _standard(line) == "ask", line


@pytest.mark.parametrize("line", [
    "cd .git && echo x > hooks/pre-commit", "cd .git; cp env.sh hooks/post-checkout", "pushd .git/hooks; echo x > pre-commit",
    "cd .git/hooks && echo x >> ../config", "cat /proc/self/cwd/.env", "echo x > /proc/self/cwd/.git/hooks/pre-commit",
    "cd /proc/self/cwd/.git && echo x > config", "env -C .git sh -c 'echo x > config'",
    "for d in a; do echo x > config; cd .git; done", 'cd "$D" && echo x > pre-commit',
])
def test_a_protected_path_is_judged_where_the_working_directory_puts_it(line: str) -> None:
    assert _standard(line) == "ask", line


def test_the_judgement_reports_where_each_path_lands() -> None:
    judged = judge_line("cd .git && echo x > hooks/pre-commit", STANDARD.shell)
    assert any(p.resolved == ".git/hooks/pre-commit" and p.access == "write" for p in judged.paths)
    assert [c.argv for c in judged.commands] == [("cd", ".git"), ("echo", "x")]
    assert _standard("cd src && echo x > out.txt") == "allow"


@pytest.mark.parametrize("line", [
    "git config core.fsmonitor 'touch x'", "git config gpg.program x", "git config difftool.x.cmd 'touch x'",
    "git config --add core.pager x", "git config alias.x '!touch y'", "git config include.path ../x",
    "git config includeIf.gitdir:/.path x", "git config set core.hooksPath h", "git config filter.x.clean c",
    "git config credential.helper x", "git config core.sshCommand x", "git config -e",
    "git -c core.pager=x log", "git -c diff.x.textconv=y diff", "git --config-env=core.pager=P log",
    "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.pager GIT_CONFIG_VALUE_0=x git log",
    "GIT_CONFIG_PARAMETERS=\"'core.pager'='x'\" git log", "export GIT_CONFIG_COUNT=1",
    "git --exec-path=. status",
])
def test_git_settings_that_may_name_a_program_ask(line: str) -> None:
    assert _standard(line) == "ask", line


def test_data_only_git_settings_and_reads_stay_allowed() -> None:
    for line in ["git config user.name 'A B'", "git config --global user.email a@b", "git config --get user.name",
                 "git config -l", "git -c user.name=x commit -m hi", "git config core.autocrlf false"]:
        assert _standard(line) == "allow", line


@pytest.mark.parametrize("line", [
    "git checkout -- .", "git checkout .", "git checkout -f main", "git restore .", "git restore --staged --worktree .",
    "git restore :/", "git stash clear", "git stash drop", "git reset --hard", "git reset -q --hard HEAD~1",
    "git reset --ha", "git clean -fd", "git clean -xf", "git branch -D keep", "git branch --delete --force keep",
    "git push --force", "git reflog expire --all", "git gc --prune=now", "git update-ref -d refs/heads/x",
    "git -C . checkout -- .", "git switch --discard-changes main",
])
def test_destructive_git_commands_ask(line: str) -> None:
    assert _standard(line) == "ask", line


@pytest.mark.parametrize("line", [
    "flock /tmp/l -c 'touch x'", "flock -x /tmp/l -c 'rm -rf d'", "flock /tmp/l --command 'touch x'",
    "timeout 5 -s KILL rm -rf d", "nice -n 1 -- -c", "script -qc 'touch x' /dev/null", "watch -n 1 touch x",
    "su -c 'touch x'", "xargs sh -c 'rm \"$1\"' _",
])
def test_wrappers_taking_a_command_string_are_unwrapped_or_ask(line: str) -> None:
    assert _standard(line) in ("ask", "deny"), line


def test_a_line_that_closes_the_function_it_is_read_in_asks(tmp_path: Path) -> None:
    escaped = tmp_path / "escaped"
    with pytest.raises(BashViewError, match="closes the function"):
        bash_normalize(f":; }}; touch {escaped}; f() {{")
    assert not escaped.exists(), "the line's own command ran outside the sandbox"
    assert _standard(":; }; touch escaped; f() {") == "ask"
    assert _standard("echo a & }; { :") == "ask"


def test_without_bash_every_line_that_needs_it_asks(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    bash_view._normalize.cache_clear()
    try:
        assert shutil.which("bash") is None
        assert _standard("echo 'a b'") == "ask"
        assert _standard("ls -la src") == "allow"  # plain words read alike by bash and the grammar
    finally:
        bash_view._normalize.cache_clear()


def _corpus(name: str) -> list[str]:
    decode = lambda raw: re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), raw)  # noqa: E731
    return [decode(line) for line in (HERE / name).read_text().splitlines() if line.strip() and not line.startswith("#")]


def test_the_benchmark_corpus_asks_for_at_most_two_percent() -> None:
    lines = _corpus("benchmark_commands.txt")
    asked = [line for line in lines if _standard(line) != "allow"]
    assert len(lines) > 50
    assert len(asked) <= 0.02 * len(lines), f"{len(asked)}/{len(lines)} ask: {asked[:5]}"
