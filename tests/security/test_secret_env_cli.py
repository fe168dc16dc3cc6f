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
                           "--cwd", str(tmp_path)], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = seen.read_text().splitlines()
    names = {line.split("=", 1)[0] for line in lines if "=" in line}
    assert sorted(name for name in SECRETS if name in names) == []
    for value in SECRETS.values():
        assert all(value not in line for line in lines)
    for name, value in KEPT.items():
        assert f"{name}={value}" in lines, name
