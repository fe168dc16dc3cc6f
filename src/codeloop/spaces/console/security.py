"""The console's guards: login sessions, the login rate limit, CSRF and ``Origin`` checks, headers.

A login exchanges an API key (the HTTP API's, :meth:`SpacesStore.key_owner`) for a random
session token held only in this process's memory: the cookie carries the token, never the
key, so a stolen cookie dies with its expiry, a logout or a restart. The cookie is
``HttpOnly`` (page scripts cannot read it) and ``SameSite=Strict`` (another site's page
cannot send it), and it also authorises the page's event stream (``EventSource`` cannot
send an ``Authorization`` header).

Every POST carries the session's CSRF token in its body and an ``Origin`` equal to the
page's own; a login POST (no session yet) needs the ``Origin``. Every console response
carries :data:`SECURITY_HEADERS`: a Content-Security-Policy without inline script or style,
so an escaping mistake still runs nothing.
"""

from __future__ import annotations

import hmac
import secrets
import time
from collections import deque
from dataclasses import dataclass, field

COOKIE = "codeloop_console"
SESSION_TTL_S = 8 * 3600.0
"""A login lasts a working day; after that the key is asked for again."""
LOGIN_FAILURES = 5
LOGIN_WINDOW_S = 60.0
"""At most :data:`LOGIN_FAILURES` wrong keys per client address in this window (429 after)."""

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
       "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",  # "no-referrer" makes Chromium send "Origin: null" on form POSTs
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}


@dataclass
class ConsoleSession:
    """One logged-in browser."""

    token: str
    owner: str
    """The key id, as the API's owner of spaces."""
    csrf: str
    expires_at: float


@dataclass
class ConsoleSessions:
    """The logged-in browsers of this process (see the module docstring)."""

    ttl_s: float = SESSION_TTL_S
    _by_token: dict[str, ConsoleSession] = field(default_factory=dict)

    def login(self, owner: str) -> ConsoleSession:
        now = time.time()
        for token in [t for t, s in self._by_token.items() if s.expires_at <= now]:
            del self._by_token[token]
        session = ConsoleSession(secrets.token_urlsafe(32), owner, secrets.token_urlsafe(32), now + self.ttl_s)
        self._by_token[session.token] = session
        return session

    def get(self, token: str | None) -> ConsoleSession | None:
        session = self._by_token.get(token or "")
        if session is None:
            return None
        if session.expires_at <= time.time():
            del self._by_token[session.token]
            return None
        return session

    def logout(self, token: str | None) -> None:
        self._by_token.pop(token or "", None)


@dataclass
class LoginLimiter:
    """Wrong keys per client address in a sliding window."""

    limit: int = LOGIN_FAILURES
    window_s: float = LOGIN_WINDOW_S
    _failures: dict[str, deque[float]] = field(default_factory=dict)

    def blocked(self, client: str) -> float:
        """Seconds until ``client`` may try again (0: now)."""
        seen = self._failures.get(client)
        if not seen:
            return 0.0
        now = time.monotonic()
        while seen and seen[0] <= now - self.window_s:
            seen.popleft()
        return seen[0] + self.window_s - now if len(seen) >= self.limit else 0.0

    def failed(self, client: str) -> None:
        if len(self._failures) > 10_000:  # many addresses: forget the oldest rather than grow
            self._failures.pop(next(iter(self._failures)))
        self._failures.setdefault(client, deque()).append(time.monotonic())


def same_origin(origin: str | None, scheme: str, host: str | None) -> bool:
    """True when the request's ``Origin`` header names the page's own origin."""
    return bool(origin and host) and origin == f"{scheme}://{host}"


def csrf_ok(session: ConsoleSession, sent: str | None) -> bool:
    return bool(sent) and hmac.compare_digest(session.csrf.encode(), (sent or "").encode())
