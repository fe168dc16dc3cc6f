"""The VALIDATE step's two validators give one verdict (``tools/arguments.py``).

``fastjsonschema`` is only a shortcut: whatever it accepts, ``jsonschema`` (the judge, draft
2020-12) must accept too, for the schema of every built-in tool; a schema using a keyword whose
meaning changed since draft 7 gets no shortcut at all.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from codeloop.profiles import PROFILE_IDS, create_profile
from codeloop.tools.arguments import ArgumentError, _validators_of, validate_arguments

SCHEMAS: dict[str, dict[str, Any]] = {}
for _profile in PROFILE_IDS:
    for _definition in create_profile(_profile).tool_registry.definitions():
        SCHEMAS.setdefault(_definition.name, _definition.parameters)

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(-3, 3, allow_nan=False) | st.text(max_size=5)
    | st.sampled_from([0, 1, 1.0, -1, "", " ", True, False]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)


def typed(schema: Any) -> st.SearchStrategy[Any]:
    """Values mostly of the type ``schema`` asks for (so valid calls are common), else anything."""
    if not isinstance(schema, dict):
        return JSON
    kind = schema.get("type")
    if "enum" in schema:
        return st.sampled_from(schema["enum"]) | JSON
    shaped: dict[str, st.SearchStrategy[Any]] = {
        "string": st.text(max_size=8), "integer": st.integers(-3, 10) | st.sampled_from([1.0, True]),
        "number": st.floats(-3, 10, allow_nan=False) | st.sampled_from([2, False]), "boolean": st.booleans(),
        "array": st.lists(typed(schema.get("items")), max_size=3), "object": arguments(schema),
    }
    return shaped.get(kind, JSON) | JSON if isinstance(kind, str) else JSON


def arguments(schema: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    props = schema.get("properties", {}) or {}
    return st.fixed_dictionaries(
        {}, optional={**{name: typed(spec) for name, spec in props.items()}, "unknown_arg": JSON})


def judge_accepts(schema: dict[str, Any], args: Any) -> bool:
    return not list(Draft202012Validator(schema).iter_errors(args))


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_every_builtin_tool_has_the_fast_check(name: str) -> None:
    # The shortcut is worth having only if the tools a model calls every round get it.
    assert _validators_of(SCHEMAS[name])[1] is not None


@settings(max_examples=300)
@given(data=st.data())
def test_the_fast_check_never_accepts_what_jsonschema_refuses(data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(sorted(SCHEMAS)))
    schema = SCHEMAS[name]
    args = data.draw(arguments(schema))
    fast = _validators_of(schema)[1]
    assert fast is not None
    try:
        fast(args)
        fast_accepts = True
    except Exception:
        fast_accepts = False
    judged = judge_accepts(schema, args)
    if fast_accepts:
        assert judged, f"{name}: fastjsonschema accepted {args!r}, jsonschema refuses it"
    # And the step itself follows the judge either way.
    if judged:
        validate_arguments(name, schema, args)
    else:
        with pytest.raises(ArgumentError):
            validate_arguments(name, schema, args)


def test_a_keyword_that_changed_since_draft_7_gets_no_shortcut_and_is_still_judged() -> None:
    # prefixItems is 2020-12 only: draft 7 ignores it and would accept ["x"] for an integer.
    schema = {"type": "object", "properties": {"pair": {"type": "array", "prefixItems": [{"type": "integer"}]}}}
    assert _validators_of(schema)[1] is None
    with pytest.raises(ArgumentError, match="pair"):
        validate_arguments("t", schema, {"pair": ["x"]})
    validate_arguments("t", schema, {"pair": [3, "anything after"]})


@pytest.mark.parametrize("value", [True, False])
def test_a_boolean_is_not_a_number_on_either_path(value: bool) -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}, "x": {"type": "number"}}}
    for key in ("n", "x"):
        with pytest.raises(ArgumentError, match=f"argument '{key}' must be of type"):
            validate_arguments("t", schema, {key: value})


def test_errors_are_worded_by_the_judge() -> None:
    schema = SCHEMAS["shell"]
    with pytest.raises(ArgumentError) as caught:
        validate_arguments("shell", schema, {"command": 3, "bogus": 1})
    text = str(caught.value)
    assert "argument 'command' must be of type string" in text and "unexpected argument 'bogus'" in text
