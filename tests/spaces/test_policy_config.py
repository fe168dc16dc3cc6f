"""Space policies as JSON: presets plus overrides, validated with field paths, applied by runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codeloop.environments.local import LocalExecutionEnvironment
from codeloop.spaces.operations import events_message_to_json
from codeloop.spaces.policy_config import PolicyConfigError, build_policy
from codeloop.spaces.runs import run_message


def test_preset_only_and_defaults() -> None:
    assert build_policy({}).name == "standard"
    assert build_policy({"preset": "permissive"}).network.enabled is True


def test_overrides_replace_preset_values() -> None:
    policy = build_policy({"preset": "standard", "shell": {"allowedCommands": ["ls"], "timeout": 2000,
                                                           "maxTimeout": 5000},
                           "network": {"enabled": True, "allowedDomains": ["example.com"]},
                           "filesystem": {"readOnly": True}})
    assert policy.shell.allowed_commands == ("ls",)
    assert (policy.shell.default_timeout_ms, policy.shell.max_timeout_ms) == (2000, 5000)
    assert policy.network.allowed_domains == ("example.com",)
    assert policy.filesystem.read_only and policy.name == "standard+custom"


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"preset": "lax"}, "policy.preset"),
        ({"shell": {"timeout": "10"}}, "policy.shell.timeout"),
        ({"shell": {"blockedPatterns": ["("]}}, "not a valid regex"),
        ({"filesystem": {"readonly": True}}, "policy.filesystem.readonly"),
        ([], "policy"),
    ],
)
def test_invalid_configs_name_the_field(config: Any, expected: str) -> None:
    with pytest.raises(PolicyConfigError, match=expected.replace(".", r"\.").replace("(", r"\(")):
        build_policy(config)


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                               st.sampled_from(["preset", "shell", "network", "filesystem", "enabled", "timeout",
                                                "allowedCommands", "readOnly", "x"]), inner, max_size=3),
                           max_leaves=8)


@given(json_values)
def test_build_policy_raises_only_policy_config_error(config: Any) -> None:
    try:
        build_policy(config)
    except PolicyConfigError:
        pass


async def _run(env: LocalExecutionEnvironment, config: dict[str, Any], *ops: dict[str, Any]) -> list[dict[str, Any]]:
    message, _ = await run_message({"protocolVersion": "1.0", "operations": list(ops)}, env, build_policy(config))
    return list(events_message_to_json(message)["events"])


async def test_read_only_space_refuses_writes(local_env: LocalExecutionEnvironment) -> None:
    events = await _run(local_env, {"filesystem": {"readOnly": True}},
                        {"type": "createFile", "path": "a", "content": "x"}, {"type": "deleteFile", "path": "a"})
    assert [e["type"] for e in events] == ["policyDenied", "policyDenied"]
    assert not (Path(local_env.working_directory()) / "a").exists()


async def test_max_file_size_and_allowed_paths(local_env: LocalExecutionEnvironment) -> None:
    events = await _run(local_env, {"filesystem": {"maxFileSize": 3, "allowedPaths": ["src/**"]}},
                        {"type": "createFile", "path": "src/a", "content": "1234"},
                        {"type": "createFile", "path": "docs/a", "content": "1"},
                        {"type": "createFile", "path": "src/b", "content": "123"})
    assert events[0]["success"] is False and "limit" in events[0]["error"]
    assert events[1]["type"] == "policyDenied" and "allowed paths" in events[1]["reason"]
    assert events[2]["success"] is True


async def test_shell_disabled(local_env: LocalExecutionEnvironment) -> None:
    events = await _run(local_env, {"shell": {"enabled": False}}, {"type": "shell", "command": "echo hi"})
    assert events[0]["type"] == "policyDenied" and "disabled" in events[0]["reason"]


async def test_policy_timeout_is_applied(local_env: LocalExecutionEnvironment) -> None:
    events = await _run(local_env, {"preset": "permissive", "shell": {"timeout": 1000}},
                        {"type": "shell", "command": "sleep 20"})
    assert events[0]["timedOut"] is True


async def test_approval_required_paths_pause_with_path_details(local_env: LocalExecutionEnvironment) -> None:
    events = await _run(local_env, {"filesystem": {"approvalRequiredPaths": ["db/**"]}},
                        {"type": "createFile", "id": "m", "path": "db/1.sql", "content": "x"})
    assert events[0]["type"] == "approvalRequired"
    assert events[0]["details"] == {"path": "db/1.sql", "policy": "filesystem.approvalRequired"}


def test_a_validated_configuration_is_shared_read_only_and_a_look_alike_is_still_judged() -> None:
    # parse_policy_config keeps what it validated (a space's policy is read for every run):
    # the kept answer cannot be changed by one caller under another, and a configuration that
    # differs only in a value's type (1.0 for 1, true for 1) is validated afresh and refused.
    from pydantic import ValidationError

    from codeloop.spaces.policy_config import PolicyConfigError, parse_policy_config

    first = parse_policy_config({"limits": {"maxOperations": 1}, "undo": {"enabled": False}})
    assert parse_policy_config({"undo": {"enabled": False}, "limits": {"maxOperations": 1}}) is first
    with pytest.raises(ValidationError):
        first.limits.maxOperations = 5  # type: ignore[misc]
    for look_alike in ({"limits": {"maxOperations": 1.0}, "undo": {"enabled": False}},
                       {"limits": {"maxOperations": True}, "undo": {"enabled": False}},
                       {"limits": {"maxOperations": 1}, "undo": {"enabled": 0}}):
        with pytest.raises(PolicyConfigError):
            parse_policy_config(look_alike)
