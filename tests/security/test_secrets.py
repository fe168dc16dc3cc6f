"""Secrets by name and by value (issue 22, class 6): filtered from commands, redacted from output.

The secret-looking names are generated (hypothesis) from parts that appear nowhere as a
whole in the code, so the filter is judged on its pattern, not on a list; ordinary names
are generated from words that hold none of the secret parts and must pass.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeloop.environments import LocalExecutionEnvironment
from codeloop.environments.envfilter import Redactor, filter_environment, is_secret, is_secret_name
from codeloop.environments.sandbox import SandboxedExecutionEnvironment

PREFIXES = ["", "ZORBLAX_", "acme_", "My_Svc_", "QUUX9_", "prod_db_", "X_", "legacy-"]
SECRET_CORES = [
    "API_KEY", "APIKEY", "key", "ACCESS_KEY_ID", "SECRET_ACCESS_KEY", "PRIVATE_KEY", "SigningKey", "TOKEN",
    "refresh_token", "AUTHTOKEN", "SECRET", "client_secret", "PASSWORD", "passwd", "PASSPHRASE", "DBPASS",
    "PAT", "CREDENTIAL", "CREDENTIALS", "creds", "AUTH", "ROOT_PWD", "DSN", "JWT", "COOKIE", "OAUTH_CLIENT",
]
SUFFIXES = ["", "_V2", "_FILE_CONTENT", "_B64", "2", "_OLD", "-prod"]
_SECRET_NAMES = st.builds(
    lambda p, c, s: p + c + s, st.sampled_from(PREFIXES), st.sampled_from(SECRET_CORES), st.sampled_from(SUFFIXES)
)
_ORDINARY_WORDS = st.sampled_from([
    "PATH", "HOME", "EDITOR", "NODE", "ENV", "DEBUG", "LEVEL", "LOG", "COLOR", "JAVA", "OPTS", "MAKE", "FLAGS",
    "HOST", "NAME", "SHLVL", "DISPLAY", "PAGER", "CI", "BUILD", "NUMBER", "REGION", "LANG", "TZ", "GIT",
    "AUTHOR", "EMAIL", "COMMIT", "BRANCH", "WORKERS", "THREADS", "PORT", "MODE", "PROFILE", "CACHE", "DIR",
])
_ORDINARY_NAMES = st.lists(_ORDINARY_WORDS, min_size=1, max_size=4).map("_".join)
_VALUES = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=0, max_size=12)


@settings(max_examples=500)
@given(name=_SECRET_NAMES, value=_VALUES)
def test_generated_secret_names_never_reach_a_command(name: str, value: str) -> None:
    environ = {"PATH": "/usr/bin", name: value}
    for policy in ("inherit-all", "allowlist"):
        assert name not in filter_environment(environ, policy), (policy, name)  # type: ignore[arg-type]


def test_the_generated_secret_names_are_at_least_a_hundred_and_unknown_to_the_code() -> None:
    names = {p + c + s for p in PREFIXES for c in SECRET_CORES for s in SUFFIXES}
    assert len(names) >= 100
    assert filter_environment(dict.fromkeys(names, "v")) == {}
    source = "\n".join(p.read_text() for p in Path(__file__).parents[2].joinpath("src").rglob("*.py"))
    unknown = [n for n in names if n.startswith(("ZORBLAX_", "acme_", "QUUX9_")) and n not in source]
    assert len(unknown) >= 100


@settings(max_examples=300)
@given(name=_ORDINARY_NAMES, value=_VALUES)
def test_ordinary_names_pass(name: str, value: str) -> None:
    assert not is_secret_name(name), name
    assert filter_environment({name: value}, "inherit-all") == {name: value}


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("DATABASE_URL", "postgres://app:hunter2hunter2@db.internal:5432/app"),
        ("HTTPS_PROXY", "http://me:pr0xy-pass@proxy:3128"),
        ("SOME_SETTING", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----"),
        ("GH_THING", "ghp_0123456789abcdefABCDEF0123456789abcd"),
        ("ANTHROPIC", "sk-ant-api03-0123456789abcdefghij"),
        ("AWS_ID", "AKIAIOSFODNN7EXAMPLE"),
        ("SLACK", "xoxb-123456789012-abcdefghijklmnop"),
    ],
)
def test_secret_values_are_filtered_whatever_the_name(name: str, value: str) -> None:
    assert is_secret(name, value)
    assert name not in filter_environment({name: value})


@pytest.mark.parametrize(
    ("name", "value"),
    [("HOMEPAGE_URL", "https://example.org/a:b@c"), ("REPO", "git@github.com:o/r.git"), ("EDITOR", "vim"),
     ("HTTP_PROXY", "http://proxy:3128"), ("PATH", "/usr/bin:/bin")],
)
def test_ordinary_values_pass(name: str, value: str) -> None:
    assert not is_secret(name, value)


def test_the_issue_examples_are_all_filtered() -> None:
    examples = {
        "AWS_SECRET_ACCESS_KEY": "x", "PGPASSWORD": "x", "PRIVATE_KEY": "x", "GH_PAT": "x", "NPM_TOKEN": "x",
        "DATABASE_URL": "mysql://root:toor@localhost/db", "SENTRY_DSN": "x", "MYSQL_PWD": "x",
        "DOCKER_AUTH_CONFIG": "x", "SSH_PASSPHRASE": "x", "AZURE_CLIENT_SECRET": "x", "GOOGLE_CREDENTIALS": "x",
    }
    assert filter_environment(examples) == {}


def test_allowlist_passes_core_and_listed_names_only() -> None:
    environ = {"PATH": "/bin", "LC_ALL": "C", "EDITOR": "vim", "CI": "1", "CI_JOB": "7", "GH_TOKEN": "t",
               "CI_TOKEN": "t"}
    kept = filter_environment(environ, "allowlist", ["EDITOR", "CI*", "GH_TOKEN"])
    assert kept == {"PATH": "/bin", "LC_ALL": "C", "EDITOR": "vim", "CI": "1", "CI_JOB": "7", "GH_TOKEN": "t"}
    assert filter_environment(environ, "allowlist") == {"PATH": "/bin", "LC_ALL": "C"}


def test_redactor_replaces_values_and_url_passwords() -> None:
    redact = Redactor.for_environment({
        "MY_API_KEY": "abcdefgh12345678", "DATABASE_URL": "postgres://u:s3cretpassw0rd@h/db", "EDITOR": "vimvimvim",
        "SHORT_TOKEN": "abc",
    })
    text = "key=abcdefgh12345678 url=postgres://u:s3cretpassw0rd@h/db pw=s3cretpassw0rd editor=vimvimvim abc"
    shown = redact(text)
    assert "abcdefgh12345678" not in shown and "s3cretpassw0rd" not in shown
    assert "[REDACTED:MY_API_KEY]" in shown and "[REDACTED:DATABASE_URL]" in shown
    assert "vimvimvim" in shown and shown.endswith(" abc")


@pytest.mark.parametrize("kind", ["local", "sandbox"])
async def test_command_output_has_secret_values_redacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    monkeypatch.setenv("ZORBLAX_SIGNING_KEY", "zq-9f8e7d6c5b4a3210")
    monkeypatch.setenv("ZORBLAX_URL", "https://bot:Pa55-w0rd-x@git.example/r")
    (tmp_path / ".env").write_text("ZORBLAX_SIGNING_KEY=zq-9f8e7d6c5b4a3210\n")
    env = LocalExecutionEnvironment(tmp_path) if kind == "local" else SandboxedExecutionEnvironment(tmp_path)
    chunks: list[str] = []
    result = await env.exec_command(
        "env | grep -c ZORBLAX_SIGNING_KEY; env | grep -c ZORBLAX_URL; cat .env; echo Pa55-w0rd-x >&2",
        on_output=lambda stream, text: chunks.append(text),
    )
    assert result.stdout.startswith("0\n0\n"), result.output  # filtered from the command
    for seen in (result.output, "".join(chunks)):
        assert "zq-9f8e7d6c5b4a3210" not in seen and "Pa55-w0rd-x" not in seen
        assert "[REDACTED:ZORBLAX_SIGNING_KEY]" in seen
    assert "[REDACTED:ZORBLAX_URL]" in result.stderr
