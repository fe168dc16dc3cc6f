"""Relay settings: flags over CODELOOP_RELAY_* over the config file over defaults."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codeloop.relay.config import RelayConfigError, load_config


def test_defaults_follow_the_spec_layout_and_limits(tmp_path: Path) -> None:
    config = load_config(str(tmp_path), environ={})
    assert config.inbox_dir == tmp_path / "inbox"
    assert config.outbox_dir == tmp_path / "outbox"
    assert config.sessions_dir == tmp_path / "sessions"
    assert config.workspace == tmp_path / "workspace"
    assert config.timeout_ms == 30_000 and config.output_limit_chars == 4000


def test_config_file_dirs_are_relative_to_root(tmp_path: Path) -> None:
    (tmp_path / "relay.toml").write_text('inbox = "in"\ntimeout = 5\noutput_limit = 100\nclipboard = false\n')
    config = load_config(str(tmp_path), environ={})
    assert config.inbox_dir == tmp_path / "in"
    assert config.timeout_ms == 5000 and config.output_limit_chars == 100 and config.clipboard is False


def test_environment_overrides_file_and_flags_override_environment(tmp_path: Path) -> None:
    (tmp_path / "relay.toml").write_text("timeout = 5\nmax_listed_files = 7\n")
    env = {
        "CODELOOP_RELAY_TIMEOUT": "9",
        "CODELOOP_RELAY_MAX_LISTED_FILES": "8",
        "CODELOOP_RELAY_ROOT": "/nowhere",
    }
    config = load_config(str(tmp_path), {"timeout": 2.5}, environ=env)
    assert config.timeout_ms == 2500
    assert config.max_listed_files == 8
    assert config.root == tmp_path


def test_root_comes_from_environment_when_no_flag(tmp_path: Path) -> None:
    assert load_config(None, environ={"CODELOOP_RELAY_ROOT": str(tmp_path)}).root == tmp_path


def test_explicit_config_file_must_exist(tmp_path: Path) -> None:
    with pytest.raises(RelayConfigError, match="does not exist"):
        load_config(str(tmp_path), config_file=str(tmp_path / "missing.toml"), environ={})


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ("timeout = 0\n", "timeout must be a number of seconds"),
        ("output_limit = -1\n", "output_limit must be a whole number"),
        ("clipboard = 'maybe'\n", "clipboard must be true or false"),
        ("colour = 'blue'\n", "unknown setting 'colour'"),
        ("inbox = 3\n", "inbox must be a directory path"),
        ("timeout = \n", "not valid TOML"),
    ],
)
def test_bad_config_values_name_the_setting_and_file(tmp_path: Path, toml: str, message: str) -> None:
    (tmp_path / "relay.toml").write_text(toml)
    with pytest.raises(RelayConfigError, match=message) as info:
        load_config(str(tmp_path), environ={})
    assert "relay.toml" in str(info.value)


def test_bad_environment_value_names_the_variable(tmp_path: Path) -> None:
    with pytest.raises(RelayConfigError, match="CODELOOP_RELAY_OUTPUT_LIMIT"):
        load_config(str(tmp_path), environ={"CODELOOP_RELAY_OUTPUT_LIMIT": "lots"})


@given(st.text(max_size=200))
def test_any_config_file_text_gives_a_config_or_a_clear_error(text: str) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        try:
            (root / "relay.toml").write_text(text, encoding="utf-8")
        except UnicodeEncodeError:
            return
        try:
            load_config(str(root), environ={})
        except RelayConfigError as exc:
            assert "relay.toml" in str(exc)


def test_policy_defaults_to_permissive_and_comes_from_file_environment_or_flag(tmp_path: Path) -> None:
    assert load_config(str(tmp_path), environ={}).policy == "permissive"
    (tmp_path / "relay.toml").write_text('policy = "restrictive"\n')
    assert load_config(str(tmp_path), environ={}).policy == "restrictive"
    assert load_config(str(tmp_path), environ={"CODELOOP_RELAY_POLICY": "standard"}).policy == "standard"
    assert load_config(str(tmp_path), {"policy": "permissive"}, environ={}).policy == "permissive"
    (tmp_path / "relay.toml").write_text('policy = "open"\n')
    with pytest.raises(RelayConfigError, match="policy must be one of restrictive, standard, permissive, got 'open'"):
        load_config(str(tmp_path), environ={})
