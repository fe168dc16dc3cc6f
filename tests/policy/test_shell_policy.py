"""Shell-line decisions: every command of a line is judged (policy presets, bypass corpus)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeloop.policy import (
    READ_ONLY_COMMANDS,
    Decision,
    NetworkPolicy,
    ShellPolicy,
    evaluate_command,
    is_read_only,
    preset,
    split_commands,
)

CORPUS = [line for line in (Path(__file__).parent / "bypass_corpus.txt").read_text().splitlines()
          if line.strip() and not line.startswith("#")]
STANDARD = preset("standard")


def _standard(line: str) -> Decision:
    return evaluate_command(line, STANDARD.shell, STANDARD.network)


def test_corpus_has_at_least_30_lines() -> None:
    assert len(CORPUS) >= 30


@pytest.mark.parametrize("line", CORPUS)
def test_bypass_corpus_is_denied_or_asked_under_standard(line: str) -> None:
    decision = _standard(line)
    assert decision.action in ("deny", "ask"), decision


@pytest.mark.parametrize(
    "line",
    ["ls -la", "pytest -q", "python3 -m pytest tests/ -x", "git status && git diff", "rm build/out.txt",
     "echo hi > out.txt", "cat a.txt | grep foo | wc -l", "make -j2 2>/dev/null", "node index.js",
     "FOO=1 npm test", "env DEBUG=1 python3 app.py", "bash -c 'echo hi'", "mkdir -p src/x && touch src/x/a.py",
     "for f in *.py; do wc -l $f; done"],
)
def test_ordinary_development_commands_run_under_standard(line: str) -> None:
    assert _standard(line).action == "allow", _standard(line)


def test_blocked_command_deny_names_it_and_suggests() -> None:
    d = _standard("ls && env X=1 sudo id")
    assert (d.action, d.rule) == ("deny", "shell.blockedCommands")
    assert "'sudo'" in d.reason and d.suggestion


def test_destructive_command_asks_with_rule() -> None:
    d = _standard("rm -rf temp/*")
    assert (d.action, d.rule) == ("ask", "shell.approvalRequired")


def test_unparseable_line_asks_and_never_allows() -> None:
    d = _standard('echo "open')
    assert (d.action, d.rule) == ("ask", "shell.unparseable")


def test_unparseable_line_is_denied_when_asking_is_off() -> None:
    d = evaluate_command('echo "open', ShellPolicy(ask_on_dynamic=False))
    assert d.action == "deny"


def test_strictest_verdict_wins_deny_over_ask() -> None:
    assert _standard("rm -rf x; sudo id").action == "deny"


def test_shell_disabled_denies_everything() -> None:
    assert evaluate_command("ls", ShellPolicy(enabled=False)).action == "deny"


def test_allow_list_checks_every_command_of_the_line() -> None:
    policy = ShellPolicy(allowed_commands=("ls", "cat"))
    assert evaluate_command("ls | cat", policy).action == "allow"
    d = evaluate_command("ls | cat; python3 x.py", policy)
    assert (d.action, d.rule) == ("deny", "shell.allowedCommands")


def test_restrictive_allows_inspection_only() -> None:
    r = preset("restrictive")
    assert evaluate_command("ls -la && cat README.md | wc -l", r.shell, r.network).action == "allow"
    assert evaluate_command("python3 -c 'print(1)'", r.shell, r.network).action == "deny"
    assert evaluate_command("$X", r.shell, r.network).action == "deny"


def test_permissive_allows_network_and_rm_but_not_sudo() -> None:
    p = preset("permissive")
    assert evaluate_command("curl https://example.com && rm -rf build", p.shell, p.network).action == "allow"
    assert evaluate_command("bash -c 'sudo id'", p.shell, p.network).action == "deny"
    assert evaluate_command("rm -rf /", p.shell, p.network).action == "deny"


def test_network_disabled_refuses_network_tools_anywhere_in_line() -> None:
    d = _standard("echo $(wget -qO- http://x)")
    assert (d.action, d.rule) == ("deny", "network.enabled")


def test_allowed_domains() -> None:
    net = NetworkPolicy(enabled=True, allowed_domains=("example.com",))
    shell = ShellPolicy()
    assert evaluate_command("curl https://api.example.com/x", shell, net).action == "allow"
    d = evaluate_command("curl https://evil.test/x", shell, net)
    assert (d.action, d.rule) == ("deny", "network.allowedDomains")
    assert evaluate_command("curl $URL", shell, net).action == "ask"


def test_custom_blocked_pattern_matches_each_command() -> None:
    policy = ShellPolicy(blocked_patterns=(r"^git\s+push",))
    assert evaluate_command("make && git push", policy).action == "deny"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([*"ab $`'\"()|&;<>{}\\=-c\n#*~/.", "sudo", "bash -c ", "env "]),
                max_size=30).map("".join))
def test_evaluate_never_raises_and_always_decides(line: str) -> None:
    d = _standard(line)
    assert d.action in ("allow", "deny", "ask")


def test_here_document_fed_to_a_shell_is_judged_by_its_commands() -> None:
    assert _standard("bash <<EOF\nsudo id\nEOF\n").action == "deny"
    assert _standard("bash <<EOF\necho hi\nEOF\n").action == "allow"


def test_here_document_fed_to_another_interpreter_asks() -> None:
    assert _standard("python3 <<EOF\nprint(1)\nEOF\n").action == "ask"


@pytest.mark.parametrize("name", sorted(READ_ONLY_COMMANDS))
def test_restrictive_runs_exactly_what_on_risk_approval_counts_as_read_only(name: str) -> None:
    r = preset("restrictive")
    line = {"env": "env", "[": "[ a.txt ]"}.get(name, f"{name} a.txt")  # "env a.txt" would run a.txt
    assert evaluate_command(line, r.shell, r.network).action == "allow"
    assert all(is_read_only(c) for c in split_commands(line))


def test_a_writing_find_asks_in_restrictive_and_is_not_read_only() -> None:
    r = preset("restrictive")
    for action in ("-delete", "-fprint out.txt", "-exec cat {} ;"):
        line = f"find . -name x {action}"
        assert evaluate_command(line, r.shell, r.network).action == "ask", line
        assert not is_read_only(split_commands(line)[0]), line
    assert evaluate_command("find . -name x", r.shell, r.network).action == "allow"
