"""Property tests of the AGENT_REQUEST parser: any text gives a request or a located error."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from codeloop.codali.needs import ROLES
from codeloop.codali.request import AgentRequestError, parse_agent_request
from codeloop.codali.yamlish import render

_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=60)
_safe = st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), min_size=1, max_size=40).filter(
    lambda s: s.strip() == s and s.strip())
_needs = st.lists(st.one_of(
    st.fixed_dictionaries({"type": st.just("file.read"), "path": _safe}),
    st.fixed_dictionaries({"type": st.just("docdex.search"), "query": _safe, "limit": st.integers(1, 100)}),
    st.fixed_dictionaries({"type": st.just("docdex.impact"), "file": _safe}),
), max_size=4)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_arbitrary_text_never_raises_anything_but_agent_request_error(text: str) -> None:
    try:
        parse_agent_request(text)
    except AgentRequestError as exc:
        assert str(exc).startswith("AGENT_REQUEST")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["AGENT_REQUEST v1", "role: builder", "needs:", "  - type: file.read",
                                 "    path: a", "- type: docdex.tree", "```", "  x: [1, 'a", "request_id: 1",
                                 "context:", "  summary: s", "\t- bad", '  - "q', "{", "}"]), max_size=12))
def test_shuffled_request_lines_give_a_request_or_a_located_error(lines: list[str]) -> None:
    try:
        request = parse_agent_request("\n".join(lines))
    except AgentRequestError as exc:
        assert exc.line is None or exc.line >= 1
    else:
        assert request.role in ROLES


@settings(max_examples=200, deadline=None)
@given(role=st.sampled_from(ROLES), request_id=_safe, needs=_needs, summary=_text, prose=_text)
def test_rendered_request_round_trips(role: str, request_id: str, needs: list[dict[str, object]], summary: str,
                                      prose: str) -> None:
    body = {"role": role, "request_id": request_id, "needs": needs, "context": {"summary": summary}}
    text = "\n".join(["AGENT_REQUEST v1", *render(body)])
    for reply in (text, f"```\n{text}\n```\n{prose}", "AGENT_REQUEST v1\n" + json.dumps(body)):
        request = parse_agent_request(reply)
        assert (request.role, request.request_id, request.summary) == (role, request_id, summary)
        assert [{"type": n.type, **n.params} for n in request.needs] == needs


_path = st.from_regex(r"[a-z][a-z0-9_]{0,8}(/[a-z][a-z0-9_]{0,8}){0,2}\.[a-z]{1,3}", fullmatch=True)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_plan_targets_of_any_text_are_none_or_clean_paths(text: str) -> None:
    from codeloop.codali.pipeline import parse_plan_targets

    targets = parse_plan_targets(text)
    assert targets is None or (targets and all(t and not t.startswith(("/", "`", '"')) for t in targets))


@settings(max_examples=200, deadline=None)
@given(st.lists(_path, min_size=1, max_size=4), st.sampled_from(["plan_targets:", "Plan targets:",
                                                                 "**plan_targets:**", '"plan_targets":']),
       st.sampled_from(["- {}", "- `{}`", '- "{}"', "1. {}", "* {} - why"]), _text)
def test_plan_targets_in_any_written_shape_come_back(paths: list[str], key: str, item: str, prose: str) -> None:
    from codeloop.codali.pipeline import parse_plan_targets

    plan = f"{prose.replace('plan', 'p')}\n\n{key}\n" + "\n".join(item.format(p) for p in paths) + "\n"
    assert parse_plan_targets(plan) == paths
