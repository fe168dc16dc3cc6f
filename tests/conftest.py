"""Suite-wide isolation."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import settings

# A landing must not be blocked by a counterexample hypothesis happens to draw that day: the
# suite's property tests run derandomized (the same examples every run, as the README's test
# command and CI run them). HYPOTHESIS_PROFILE=explore draws new examples, for hunting locally;
# what it finds goes into the tests as an @example.
settings.register_profile("ci", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="session", autouse=True)
def _private_user_config_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Trusting a project (``codeloop trust``, an "always" answer) writes the user's
    ``trusted.json``: never the real one. Session-scoped so hypothesis tests may use it."""
    old = os.environ.get("CODELOOP_CONFIG_DIR")
    os.environ["CODELOOP_CONFIG_DIR"] = str(tmp_path_factory.mktemp("user-config"))
    old_state = os.environ.get("CODELOOP_STATE_DIR")
    # Session logs, the approvals store of issue 34 (every ask of a run, the relay or a local
    # spaces run waits there) and the snapshot repositories of issue 35 (a spaces server
    # snapshots its runs): never the user's state directory.
    os.environ["CODELOOP_STATE_DIR"] = str(tmp_path_factory.mktemp("state"))
    yield
    if old is None:
        os.environ.pop("CODELOOP_CONFIG_DIR", None)
    else:
        os.environ["CODELOOP_CONFIG_DIR"] = old
    if old_state is None:
        os.environ.pop("CODELOOP_STATE_DIR", None)
    else:
        os.environ["CODELOOP_STATE_DIR"] = old_state
