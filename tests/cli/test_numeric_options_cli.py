"""Issue 32: numbers out of range, wherever a user or a file gives them to the ``codeloop``
command (options, operations JSON, config files), are a one-line error with exit status 2,
never a traceback. Numbers of 5,000 digits are the probe: Python refuses to convert them with
a ValueError that no JSON or TOML error handler expects."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_run_cli import CODELOOP, isolated_env

from codeloop.config import ConfigError, parse_config
from codeloop.policy.input_limits import InputLimitError, loads_limited

HUGE = "9" * 5000


def _cli(args: list[str], cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CODELOOP, *args], capture_output=True, text=True, env=isolated_env(cwd), timeout=60,
                          input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL)


def _refused(done: subprocess.CompletedProcess[str], *words: str, code: int = 2) -> None:
    assert done.returncode == code, (done.returncode, done.stdout[-500:], done.stderr[-2000:])
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    assert all(w in done.stderr for w in words), done.stderr[-2000:]


def test_spaces_exec_refuses_a_5000_digit_timeout_as_the_server_does(workspace: Path) -> None:
    message = '{"protocolVersion": "1.0", "operations": [{"type": "shell", "command": "ls", "timeout": %s}]}'
    done = _cli(["spaces", "exec", "--workspace", str(workspace), "-"], workspace, stdin=message % HUGE)
    _refused(done, "5000 digits", "over the 100-digit limit")
    # A number of ordinary length but out of the field's range is the protocol's validation error.
    done = _cli(["spaces", "exec", "--workspace", str(workspace), "-"], workspace, stdin=message % ("9" * 30))
    events = json.loads(done.stdout)
    assert "timeout" in json.dumps(events) and "Traceback" not in done.stderr


def test_spaces_serve_refuses_a_port_out_of_range(workspace: Path) -> None:
    for port in ("99999", "-1", HUGE):
        _refused(_cli(["spaces", "serve", "--port", port], workspace), "--port")


def test_a_config_number_out_of_range_is_a_one_line_error(workspace: Path) -> None:
    (workspace / ".codeloop").mkdir()
    (workspace / ".codeloop" / "config.toml").write_text(f"max_turns = {HUGE}\n")
    _refused(_cli(["run", "hi", "--cwd", str(workspace), "--base-url", "http://127.0.0.1:9/v1"], workspace),
             "config.toml", "invalid TOML")
    # The same parser judges every number of the file (the CLI shows its ConfigError as above).
    for text in ("max_turns = 99999999999\n", "max_retries = 1000000\n",
                 f'[[hooks]]\nevent = "stop"\ncommand = "true"\ntimeout = {"9" * 400}\n',
                 '[mcp_servers.x]\ncommand = "x"\ntimeout = inf\n', '[mcp_servers.x]\ncommand = "x"\ntimeout = nan\n'):
        with pytest.raises(ConfigError, match="must be"):
            parse_config(text, workspace / "config.toml")


@pytest.mark.parametrize("args", [["--max-turns", "9" * 4000], ["--max-retries", "1000"]])
def test_run_options_out_of_range_are_refused(workspace: Path, args: list[str]) -> None:
    _refused(_cli(["run", "hi", "--cwd", str(workspace), *args], workspace), args[0])


def test_relay_counts_out_of_range_are_refused_from_options_and_relay_toml(tmp_path: Path) -> None:
    root = tmp_path / "root"
    _refused(_cli(["relay", "new", "x", "--root", str(root), "--max-read-chars", "9" * 30], tmp_path),
             "max_read_chars must be a whole number from 0 to", code=1)  # the relay's usage errors exit 1
    root.mkdir()
    (root / "relay.toml").write_text(f"max_read_chars = {HUGE}\n")
    _refused(_cli(["relay", "new", "x", "--root", str(root)], tmp_path), "relay.toml", code=1)


@settings(max_examples=200)
@given(number=st.integers(min_value=-(10**100) + 1, max_value=10**100 - 1), extra=st.integers(1, 5000))
def test_json_numbers_up_to_100_digits_parse_and_longer_ones_are_refused(number: int, extra: int) -> None:
    assert loads_limited(f'{{"n": {number}}}', "message") == {"n": number}
    with pytest.raises(InputLimitError, match="digits"):
        loads_limited(f'{{"n": {"-" if number < 0 else ""}{abs(number) or 1}{"7" * (100 + extra)}}}', "message")
