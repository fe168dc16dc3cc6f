"""Budget keys in config.toml (issue 36): checked values, durations, and a repository that may
tighten the user's budgets but never loosen them before it is trusted."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codeloop.config import ConfigError, load_config, parse_config, parse_duration
from codeloop.policy.trust import trust


def test_budget_keys_parse() -> None:
    config = parse_config('max_cost = 2.5\nmax_tokens = 2_000_000\nmax_time = "1h30m"\n', Path("c.toml"))
    assert (config.max_cost, config.max_tokens, config.max_time) == (2.5, 2_000_000, "1h30m")
    assert parse_config("max_time = 90\n", Path("c.toml")).max_time == 90


@pytest.mark.parametrize(("text", "message"), [
    ("max_cost = -1\n", r"c\.toml:1: max_cost must be a number of US dollars >= 0"),
    ('max_cost = "cheap"\n', "max_cost must be a number"),
    ("max_tokens = 0\n", "max_tokens must be a whole number > 0"),
    ("max_tokens = 1.5\n", "max_tokens must be a whole number > 0"),
    ('max_time = "soon"\n', 'max_time must be a duration such as "90s"'),
    ("max_time = 0\n", "max_time must be a duration"),
    ("max_time = true\n", "max_time must be a duration"),
])
def test_bad_budget_values_name_the_file_line_and_fix(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_config(text, Path("c.toml"))


@pytest.mark.parametrize(("text", "seconds"), [("90", 90), ("90s", 90), ("5m", 300), ("1h30m", 5400),
                                               ("2.5h", 9000), ("1m30s", 90)])
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@given(st.text(max_size=12))
def test_a_duration_is_seconds_or_a_one_line_error(text: str) -> None:
    try:
        assert parse_duration(text) > 0
    except ValueError as exc:
        assert "\n" not in str(exc) and ("duration" in str(exc) or "longer than 0" in str(exc))


def test_an_untrusted_project_can_tighten_but_not_loosen_budgets(dirs: tuple[Path, Path]) -> None:
    user, ws = dirs
    user.write_text('max_cost = 1.0\nmax_time = "10m"\n')
    project = ws / ".codeloop" / "config.toml"
    project.write_text('max_cost = 50.0\nmax_time = "2m"\nmax_tokens = 1000\n')
    config = load_config(ws)
    assert (config.max_cost, config.max_time, config.max_tokens) == (1.0, "2m", 1000)
    trust(project, project.read_bytes())
    assert load_config(ws).max_cost == 50.0
