"""A headless system Chromium driven by Playwright, for the console tests (no browser download).

Each page records what the tests must see never happen: dialogs (``alert`` of an XSS
payload) and Content-Security-Policy violations the browser reports. Screenshots go to
``test-artifacts/console/`` (gitignored; printed by the tests).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = os.environ.get("CODELOOP_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "console"

_RECORD = """
window.__csp = [];
document.addEventListener("securitypolicyviolation",
  (e) => window.__csp.push(e.violatedDirective + " " + e.blockedURI));
"""


def chromium_or_skip() -> Any:
    """The sync Playwright handle and a launched browser, or a skip saying what is missing."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("Playwright for Python is not installed (pip install -e '.[dev]')")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no system Chromium at {CHROMIUM} (scripts/system-deps installs the Debian package chromium)")
    pw = sync_playwright().start()
    try:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True,
                                     args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
    except Exception as exc:
        pw.stop()
        pytest.skip(f"system Chromium at {CHROMIUM} does not start headless: {str(exc).splitlines()[0]}")
    return pw, browser


@pytest.fixture(scope="module", name="browser")
def browser_fixture() -> Iterator[Any]:
    """One headless Chromium for a test module (import this name to use the ``browser`` fixture)."""
    pw, b = chromium_or_skip()
    yield b
    b.close()
    pw.stop()


class Watched:
    """A page with its dialogs and console messages recorded."""

    def __init__(self, context: Any) -> None:
        self.context = context
        self.page = context.new_page()
        self.dialogs: list[str] = []
        self.console: list[str] = []
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.page.on("console", lambda m: self.console.append(m.text))

    def csp_violations(self) -> list[str]:
        found = list(self.page.evaluate("window.__csp || []"))
        return found + [m for m in self.console if "Content Security Policy" in m]

    def assert_clean(self) -> None:
        assert self.dialogs == [], f"a dialog opened: {self.dialogs}"
        assert self.csp_violations() == [], self.csp_violations()

    def screenshot(self, name: str, full_page: bool = True) -> Path:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=full_page)
        print(f"screenshot: {path}")
        return path


def new_page(browser: Any, **context_args: Any) -> Watched:
    context = browser.new_context(**context_args)
    context.add_init_script(_RECORD)
    return Watched(context)


def login(browser: Any, base_url: str, key: str, **context_args: Any) -> Watched:
    """A fresh browser context logged in through the login form."""
    w = new_page(browser, base_url=base_url, **context_args)
    w.page.goto("/")
    assert w.page.url.endswith("/console/login")
    w.page.fill("#key", key)
    w.page.click("form.login button")
    w.page.wait_for_url(f"{base_url}/")
    return w
