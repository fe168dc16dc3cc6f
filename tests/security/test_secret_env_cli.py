"""Issue 32: secrets that slipped past the environment filter, checked where it matters: a real
command started by ``codeloop tool shell`` writes its own environment to a file, and the test
reads that file (the command's output would be redacted, which proves nothing about what the
command could read)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from codeloop.environments.envfilter import is_secret

CODELOOP = str(Path(sys.executable).with_name("codeloop"))

SECRETS = {
    "AUTHORIZATION": "Bearer eyJhbGciOiJIUzI1NiJ9.c2VjcmV0LXBheWxvYWQ.s1gnature",
    "HTTP_AUTHORIZATION": "Basic dXNlcjpodW50ZXIy",
    "SQLSERVER": "Server=db.internal;Database=app;User Id=sa;Password=Hunter2-Prod!;",
    "ODBC_DEFAULT": "Driver={PostgreSQL};Server=db;Uid=app;pwd=s3cr3t-odbc-pass",
    "SLACK_URL": "https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXXXXXXXXXXXXXX",
    "ALERTS": "https://discord.com/api/webhooks/123456789/abcdefghijklmnopqrstuvwxyz",
    "NOTIFY_HOOK": "https://example.webhook.office.com/webhookb2/abc@def/IncomingWebhook/123/456",
    "LC_DEPLOY_TOKEN": "plain-value-1234567890",
    "LC_SMUGGLED": "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "PYTHONPATH": "/opt/lib:https://deploy:Pr0d-Passw0rd@pypi.internal.example/simple",
}
KEPT = {"LC_ALL": "C.UTF-8", "LC_TERMINAL": "iTerm2", "EDITOR_THEME": "dark", "BUILD_MODE": "release"}


def test_secret_shapes_never_reach_a_command_and_ordinary_settings_do(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(SECRETS)
    env.update(KEPT)
    seen = tmp_path / "seen.env"
    done = subprocess.run([CODELOOP, "tool", "shell", "--args", json.dumps({"command": f"env > {seen}"}),
                           "--cwd", str(tmp_path), "--approval", "never-ask"], capture_output=True, text=True, env=env,
                          timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = seen.read_text().splitlines()
    names = {line.split("=", 1)[0] for line in lines if "=" in line}
    assert sorted(name for name in SECRETS if name in names) == []
    for value in SECRETS.values():
        assert all(value not in line for line in lines)
    for name, value in KEPT.items():
        assert f"{name}={value}" in lines, name


_TOKEN = st.text(alphabet="ABCDEFabcdef0123456789-_.", min_size=8, max_size=40)
_WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=10)


@settings(max_examples=200)
@given(scheme=st.sampled_from(["Bearer", "bearer", "Basic", "Token"]), token=_TOKEN,
       before=st.lists(st.tuples(_WORD, _WORD), max_size=3), key=st.sampled_from(["Password", "pwd", "PASSWORD"]),
       after=st.lists(st.tuples(_WORD, _WORD), max_size=3))
def test_generated_authorization_values_and_connection_strings_are_secrets(
        scheme: str, token: str, before: list[tuple[str, str]], key: str, after: list[tuple[str, str]]) -> None:
    assert is_secret("ORDINARY_NAME", f"{scheme} {token}")
    parts = [f"{k}={v}" for k, v in before] + [f"{key}={token}"] + [f"{k}={v}" for k, v in after]
    assert is_secret("CONN", ";".join(parts))


@settings(max_examples=200)
@given(parts=st.lists(_WORD, min_size=1, max_size=6))
def test_generated_paths_in_core_variables_are_not_secrets(parts: list[str]) -> None:
    value = ":".join("/" + "/".join(parts[: i + 1]) for i in range(len(parts)))
    assert not is_secret("PYTHONPATH", value) and not is_secret("LC_ALL", "C.UTF-8")
