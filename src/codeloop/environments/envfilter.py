"""Which host environment variables a command sees, and redaction of the secrets it does
not (loop spec §4.2, issue 22).

Policies (``EnvPolicy``):

- ``inherit-all`` (default): everything except secrets (``is_secret``).
- ``allowlist``: only :data:`CORE_VARIABLES`, ``LC_*`` and the names or ``fnmatch``
  patterns given as ``allow``; a secret-looking variable passes only when ``allow`` names
  it exactly.
- ``core-only``: only :data:`CORE_VARIABLES` (and ``LC_*`` locale settings).
- ``none``: nothing; the command starts from an empty environment (pass what it needs in
  ``env_vars``).

A variable is a secret when its name (case-insensitive) contains one of
:data:`SECRET_NAME_PARTS`, ends in ``PAT``, or has one of :data:`SECRET_NAME_WORDS` as a word
(``MYSQL_PWD``, ``creds2``, ``HTTP_AUTHORIZATION``); or when its value is a URL with a password
(``postgres://u:pw@host``), a private key, starts like a well-known token (``ghp_``, ``sk-``, ...),
is an Authorization header's value (``Bearer ...``), a connection string with ``Password=`` or
``pwd=``, a webhook URL (Slack, Discord, Teams, Google Chat, Zapier) or a URL with a credential
in its query string. Core variables and the locale settings are checked by value only (a
``PYTHONPATH`` with ``user:pass@`` URLs is filtered); other ``LC_*`` names are checked as any.
Broad on purpose: a harmless variable filtered by mistake costs a line in ``allow``; a
secret let through reaches every command. The core variables are never filtered, so
``inherit-all`` and ``core-only`` always carry them when the host has them.

``Redactor``: the values of the filtered secrets (and passwords inside URLs) are replaced
by ``[REDACTED:NAME]`` in command output before it goes to a model; a command may still
find them (in a file, in ``/proc`` of a parent outside the sandbox).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping

from codeloop.environments.base import EnvPolicy

SECRET_NAME_PARTS: tuple[str, ...] = ("KEY", "TOKEN", "SECRET", "PASS", "CREDENTIAL", "PRIVATE", "WEBHOOK")
"""A name containing any of these (upper-cased) is a secret."""

SECRET_NAME_WORDS: frozenset[str] = frozenset(
    {"PWD", "AUTH", "OAUTH", "AUTHORIZATION", "CREDS", "DSN", "JWT", "BEARER", "SALT", "OTP", "COOKIE", "PAT"}
)
"""A name with one of these as a word (letters between other characters) is a secret."""

NOT_SECRETS: frozenset[str] = frozenset({"OLDPWD", "TOKENIZERS_PARALLELISM"})
"""Names the pattern would catch that are known settings, not secrets."""

MIN_REDACTED_LENGTH = 8
"""Shorter secret values are not redacted from output (they would match ordinary text)."""

_WORDS = re.compile(r"[^A-Z]+")
_URL_PASSWORD = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^/\s:@]*:([^/\s@]+)@")
_CONNECTION_PASSWORD = re.compile(r"(?i)(?:^|[;\s])(?:password|passwd|pwd)\s*=\s*([^;\s]+)")
"""``Password=...`` of an ADO.NET / ODBC / JDBC / libpq keyword connection string."""
_SECRET_VALUE = re.compile(
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----"
    r"|^(?:ghp_|gho_|ghu_|ghs_|ghr_|github_pat_|glpat-|xox[abprs]-|sk-|sk_live_|rk_live_|AKIA|ASIA|AIza|hf_|npm_"
    r"|pypi-)[A-Za-z0-9_\-]{16,}"
    # An Authorization header's value: a scheme, then the credential.
    r"|(?i:^\s*(?:bearer|basic|digest|token|negotiate)\s+)[A-Za-z0-9._~+/=\-]{8,}"
    # Webhook URLs carry their credential in the path: Slack, Discord, Teams/Office, Google Chat, Zapier.
    r"|(?i:hooks\.slack\.com/(?:services|workflows|triggers)/)"
    r"|(?i:discord(?:app)?\.com/api/webhooks/)"
    r"|(?i:\.webhook\.office\.com/|outlook\.office\.com/webhook/|hooks\.zapier\.com/hooks/)"
    r"|(?i:chat\.googleapis\.com/v1/spaces/\S*[?&]key=)"
    # Any URL with a credential in its query string.
    r"|(?i:://\S*[?&](?:access_token|api_?key|token|secret|password|sig|signature|auth)=[^&\s]{8,})"
)

CORE_VARIABLES: frozenset[str] = frozenset(
    {
        "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "TMPDIR", "TZ",
        "PWD", "COLORTERM",
        # Language toolchains: where compilers, packages and version managers live.
        "GOPATH", "GOROOT", "GOBIN", "GOMODCACHE", "GOCACHE",
        "CARGO_HOME", "RUSTUP_HOME",
        "NVM_DIR", "NVM_BIN", "NODE_PATH", "NPM_CONFIG_PREFIX", "PNPM_HOME", "BUN_INSTALL", "DENO_DIR",
        "PYENV_ROOT", "VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "PYTHONPATH",
        "UV_CACHE_DIR", "PIP_CACHE_DIR", "POETRY_HOME",
        "JAVA_HOME", "GRADLE_HOME", "MAVEN_HOME", "M2_HOME",
        "GEM_HOME", "GEM_PATH", "RBENV_ROOT", "RUBY_HOME",
        "DOTNET_ROOT", "ANDROID_HOME", "ANDROID_SDK_ROOT", "FLUTTER_ROOT",
        "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR",
    }
)
"""Variables kept by ``core-only`` and never treated as secrets (spec §4.2 "always include")."""


def is_secret_name(name: str) -> bool:
    """True when ``name`` looks like it holds a credential (see the module docstring)."""
    upper = name.upper()
    if upper in CORE_VARIABLES or upper in NOT_SECRETS:
        return False
    if any(part in upper for part in SECRET_NAME_PARTS) or upper.endswith("PAT"):
        return True
    return not SECRET_NAME_WORDS.isdisjoint(_WORDS.split(upper))


def is_secret_value(value: str) -> bool:
    """True when ``value`` is a URL with a password, a private key, a well-known token, an
    Authorization header's value (``Bearer ...``), a connection string with a password
    (``...;Password=...``), a webhook URL or a URL with a credential in its query."""
    return (_URL_PASSWORD.search(value) is not None or _SECRET_VALUE.search(value) is not None
            or _CONNECTION_PASSWORD.search(value) is not None)


LOCALE_VARIABLES: frozenset[str] = frozenset({
    "LC_ALL", "LC_CTYPE", "LC_COLLATE", "LC_MESSAGES", "LC_MONETARY", "LC_NUMERIC", "LC_TIME", "LC_ADDRESS",
    "LC_IDENTIFICATION", "LC_MEASUREMENT", "LC_NAME", "LC_PAPER", "LC_TELEPHONE",
})
"""The locale settings of POSIX and glibc: the only ``LC_*`` names exempt from the name check
(``LC_*`` is forwarded by ssh, so other ``LC_`` names are sometimes used to smuggle tokens)."""


def is_secret(name: str, value: str) -> bool:
    """True when the variable ``name=value`` must not reach a command. Core variables and
    locale settings are exempt from the name check, never from the value check: a
    ``PYTHONPATH`` holding ``https://user:pass@host/...`` is a secret."""
    if is_secret_value(value):
        return True
    if name in CORE_VARIABLES or name in LOCALE_VARIABLES:
        return False
    return is_secret_name(name)


def _is_core(name: str) -> bool:
    """Kept by ``core-only`` and ``allowlist`` (when not a secret)."""
    return name in CORE_VARIABLES or name.startswith("LC_")


def filter_environment(
    environ: Mapping[str, str], policy: EnvPolicy = "inherit-all", allow: Iterable[str] = ()
) -> dict[str, str]:
    """Return the variables of ``environ`` a command may see under ``policy`` (spec §4.2).

    ``allow`` holds names (always passed, even secret-looking ones, under ``inherit-all``
    and ``allowlist``) and, for ``allowlist``, ``fnmatch`` patterns of further names.
    Raises ``ValueError`` for an unknown policy name.
    """
    allowed = set(allow)
    if policy == "inherit-all":
        return {k: v for k, v in environ.items() if k in allowed or not is_secret(k, v)}
    if policy == "allowlist":
        patterns = [p for p in allowed if any(c in p for c in "*?[")]
        return {
            k: v for k, v in environ.items()
            if k in allowed
            or (not is_secret(k, v) and (_is_core(k) or any(fnmatch.fnmatchcase(k, p) for p in patterns)))
        }
    if policy == "core-only":
        return {k: v for k, v in environ.items() if _is_core(k) and not is_secret(k, v)}
    if policy == "none":
        return {}
    raise ValueError(
        f"Unknown environment policy {policy!r}; use 'inherit-all', 'allowlist', 'core-only' or 'none'"
    )


class Redactor:
    """Replaces the values of a host's secret variables in text with ``[REDACTED:NAME]``.

    Example::

        redact = Redactor.for_environment(os.environ)
        shown = redact(result.output)
    """

    def __init__(self, secrets: Mapping[str, str]) -> None:
        """``secrets`` maps each value to hide to the name shown in its place."""
        self.names = {value: name for value, name in secrets.items() if len(value) >= MIN_REDACTED_LENGTH}
        # Longest first, so a value containing another is replaced whole.
        ordered = sorted(self.names, key=len, reverse=True)
        self.pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None

    @classmethod
    def for_environment(cls, environ: Mapping[str, str], allow: Iterable[str] = ()) -> Redactor:
        """A redactor for the secrets of ``environ`` (``is_secret``), except names in ``allow``."""
        allowed = set(allow)
        secrets: dict[str, str] = {}
        for name, value in environ.items():
            if name in allowed or not is_secret(name, value):
                continue
            secrets[value] = name
            for password in (*_URL_PASSWORD.findall(value), *_CONNECTION_PASSWORD.findall(value)):
                secrets[password] = name
        return cls(secrets)

    def __bool__(self) -> bool:
        return self.pattern is not None

    def __call__(self, text: str) -> str:
        if self.pattern is None or not text:
            return text
        return self.pattern.sub(lambda found: f"[REDACTED:{self.names[found.group()]}]", text)
