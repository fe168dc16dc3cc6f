"""config.toml loading: precedence, every key checked, clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeloop.config import ConfigError, load_config, parse_config
from codeloop.policy.trust import trust


def test_project_config_wins_key_by_key_and_servers_merge(dirs: tuple[Path, Path]) -> None:
    user, ws = dirs
    user.write_text('model = "m-user"\nprovider = "openai"\nmax_turns = 10\n'
                    '[mcp_servers.files]\ncommand = "python"\nargs = ["-m", "x"]\n')
    project = ws / ".codeloop" / "config.toml"
    project.write_text(
        'model = "m-project"\napproval = "always-ask"\n[mcp_servers.web]\nurl = "http://127.0.0.1:9/mcp"\ntimeout = 5\n')
    trust(project, project.read_bytes())  # MCP servers of a project apply once trusted
    config = load_config(ws)
    assert (config.model, config.provider, config.max_turns, config.approval) == ("m-project", "openai", 10, "always-ask")
    assert config.mcp_servers["files"].args == ("-m", "x")
    assert config.mcp_servers["web"].url == "http://127.0.0.1:9/mcp" and config.mcp_servers["web"].timeout == 5
    assert len(config.sources) == 2


def test_no_files_gives_defaults(dirs: tuple[Path, Path]) -> None:
    config = load_config(dirs[1])
    assert config.model is None and config.mcp_servers == {} and config.sources == ()


@pytest.mark.parametrize(("text", "message"), [
    ('modle = "x"\n', r"c\.toml:1: unknown key 'modle'; did you mean 'model'\?"),
    ('model = "x"\nmax_turns = "5"\n', r"c\.toml:2: max_turns must be a whole number"),
    ("max_turns = true\n", r"max_turns must be a whole number"),
    ('sandbox = "open"\n', r"c\.toml:1: sandbox = 'open' is not one of read-only, workspace-write, off"),
    ("model = 3\n", r"c\.toml:1: model must be a non-empty string"),
    ("x = [\n", r"c\.toml: invalid TOML: .*fix the syntax"),
    ('[mcp_servers.a]\ncommand = "py"\nargz = []\n', r"c\.toml:3: unknown key \[mcp_servers\.a\] 'argz'; did you mean 'args'"),
    ('[mcp_servers.a]\ncommand = "py"\nargs = "-m x"\n', r"c\.toml:3: \[mcp_servers\.a\] args must be a list of strings"),
    ("[mcp_servers.a]\ntimeout = 3\n", r"needs exactly one of command"),
    ('[mcp_servers.a]\nurl = "ftp://h"\n', r"url must be an http"),
    ('[mcp_servers.a__b]\nurl = "http://h"\n', r"contain no '__'"),
    ('mcp_servers = 3\n', r"mcp_servers must be tables"),
    ('model_file = "models/q.gguf"\n', r"c\.toml:1: model_file must be an absolute path \(or start with ~/\), "
                                       r"e\.g\. model_file = \"~/models/q\.gguf\""),
    ("gpu_layers = -1\n", r"c\.toml:1: gpu_layers must be a whole number from 0 to 10000"),
    ('gpu_layers = "all"\n', r"gpu_layers must be a whole number"),
    ("candidates = 0\n", r"c\.toml:1: candidates must be a whole number from 1 to 16"),
    ("candidates = 17\n", r"candidates must be a whole number from 1 to 16"),
])
def test_bad_config_names_file_line_and_fix(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_config(text, Path("c.toml"))


def test_non_utf8_project_config_is_a_clear_error(dirs: tuple[Path, Path]) -> None:
    (dirs[1] / ".codeloop" / "config.toml").write_bytes(b'model = "\xff"\n')
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_config(dirs[1])


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_parse_config_only_ever_raises_config_error(text: str) -> None:
    try:
        parse_config(text, Path("c.toml"))
    except ConfigError:
        pass


def test_model_file_and_gpu_layers_keys(dirs: tuple[Path, Path]) -> None:
    """Issue 33: the user's ``model_file`` and ``gpu_layers`` apply; a project's ``model_file``
    (llama-server started on a file the repository names) only once the project is trusted."""
    user, ws = dirs
    user.write_text('model_file = "~/models/a.gguf"\ngpu_layers = 4\n')
    config = load_config(ws)
    assert (config.model_file, config.gpu_layers) == ("~/models/a.gguf", 4)
    project = ws / ".codeloop" / "config.toml"
    project.write_text('model_file = "/srv/b.gguf"\ngpu_layers = 99\n')
    config = load_config(ws)
    assert (config.model_file, config.gpu_layers) == ("~/models/a.gguf", 99)
    assert "model_file" in config.warnings[0]
    trust(project, project.read_bytes())
    assert load_config(ws).model_file == "/srv/b.gguf"
