"""Parsing AGENT_REQUEST v1 as models write it (codali spec §1, §2, §7)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codeloop.codali.request import AgentRequestError, parse_agent_request

SPEC = Path("/work/shared/specs/codali-agent-protocol.md")
SPEC_7_EXAMPLE = """AGENT_REQUEST v1
role: architect
request_id: 123
needs:
  - type: docdex.search
    query: "landing page HTML"
    limit: 5
  - type: file.read
    path: "src/public/index.html"
context:
  summary: "Need root page HTML to finish plan"
"""

SPEC_1_FILLED = """AGENT_REQUEST v1
role: librarian
request_id: 6f1c2d4e-0000-4000-8000-000000000001
needs:
  - type: docdex.search
    query: "auth login"
    limit: 5
  - type: docdex.snippet
    doc_id: "docs/guide.md#L5"
    window: 15
  - type: docdex.open
    path: "src/public/index.html"
    start_line: 1
    end_line: 200
  - type: docdex.impact
    file: "src/auth/login.ts"
  - type: docdex.web
    query: "html5 landing page"
  - type: file.read
    path: "src/public/index.html"
  - type: file.list
    root: "."
    pattern: "**/*.html"
context:
  summary: "Need file contents to finalize plan"
  constraints:
    - "Only touch HTML"
"""


def test_7_architect_example_parses() -> None:
    request = parse_agent_request(SPEC_7_EXAMPLE)
    assert (request.role, request.request_id) == ("architect", "123")
    assert [(n.type, dict(n.params)) for n in request.needs] == [
        ("docdex.search", {"query": "landing page HTML", "limit": 5}),
        ("file.read", {"path": "src/public/index.html"}),
    ]
    assert request.summary == "Need root page HTML to finish plan"
    assert [n.line for n in request.needs] == [5, 8]


def test_7_example_as_printed_in_the_spec_file() -> None:
    if not SPEC.exists():
        pytest.skip("shared spec not present in this checkout")
    section = SPEC.read_text(encoding="utf-8").split("## 7) Example (Architect)")[1]
    assert parse_agent_request(section).needs[1].params == {"path": "src/public/index.html"}


def test_1_envelope_with_every_need_of_the_template() -> None:
    request = parse_agent_request(SPEC_1_FILLED)
    assert [n.type for n in request.needs] == ["docdex.search", "docdex.snippet", "docdex.open", "docdex.impact",
                                               "docdex.web", "file.read", "file.list"]
    assert request.needs[2].params == {"path": "src/public/index.html", "start_line": 1, "end_line": 200}
    assert request.constraints == ("Only touch HTML",)


def test_1_template_placeholders_are_rejected_with_line_and_field() -> None:
    if not SPEC.exists():
        pytest.skip("shared spec not present in this checkout")
    text = SPEC.read_text(encoding="utf-8")
    template = text[text.index("### AGENT_REQUEST"):text.index("### CODALI_RESPONSE")]
    with pytest.raises(AgentRequestError) as info:
        parse_agent_request(template)
    assert info.value.field == "role" and info.value.line == 4


def test_inside_a_fence_with_prose_around() -> None:
    reply = "I need more context.\n\n```yaml\n" + SPEC_7_EXAMPLE + "```\n\nThen I will write the plan.\n"
    assert parse_agent_request(reply).request_id == "123"


def test_outside_a_fence_followed_by_prose() -> None:
    reply = "Sure.\n" + SPEC_7_EXAMPLE + "I will wait for the response.\n"
    assert len(parse_agent_request(reply).needs) == 2


def test_markdown_decorated_header() -> None:
    assert parse_agent_request("**AGENT_REQUEST v1**\n" + SPEC_7_EXAMPLE.split("\n", 1)[1]).role == "architect"


def test_json_after_the_header() -> None:
    body = {"role": "builder", "request_id": "b-1", "needs": [{"type": "file.read", "path": "a.py"}]}
    request = parse_agent_request("AGENT_REQUEST v1\n```json\n" + json.dumps(body, indent=2) + "\n```\n")
    assert (request.role, request.needs[0].params["path"]) == ("builder", "a.py")


def test_bare_json_object_in_prose() -> None:
    body = {"AGENT_REQUEST": "v1", "role": "critic", "request_id": 7,
            "needs": [{"type": "docdex.tree", "maxDepth": "2"}]}
    request = parse_agent_request("Let me check.\n" + json.dumps(body) + "\nok")
    assert request.request_id == "7" and request.needs[0].params == {"maxDepth": 2, "path": ""}


def test_aliases_and_numeric_strings_are_normalized() -> None:
    request = parse_agent_request(
        "AGENT_REQUEST v1\nrole: Librarian\nrequest_id: x\nneeds:\n- type: docdex.impact\n  path: a.ts\n"
        "- type: docdex.search\n  query: q\n  limit: '3'\n")
    assert [dict(n.params) for n in request.needs] == [{"file": "a.ts"}, {"query": "q", "limit": 3}]
    assert request.role == "librarian"


def test_missing_request_id_is_generated_and_warned() -> None:
    request = parse_agent_request("AGENT_REQUEST v1\nrole: builder\nneeds: []\n")
    assert request.request_id.startswith("req-") and request.warnings == ("request_id_missing",)


@pytest.mark.parametrize(("text", "line", "field", "fragment"), [
    ("AGENT_REQUEST v1\nrole: boss\nneeds: []", 2, "role", "'boss' is not one of"),
    ("AGENT_REQUEST v1\nrole: critic\nrequest_id: 1\nneeds:\n  - type: docdex.search\n    limit: 5\n",
     5, "needs[0].query", "required for docdex.search"),
    ("AGENT_REQUEST v1\nrole: critic\nrequest_id: 1\nneeds:\n  - type: docdex.search\n    query: q\n"
     "    limit: lots\n", 7, "needs[0].limit", "must be an integer"),
    ("AGENT_REQUEST v1\nrole: critic\nrequest_id: 1\nneeds:\n  - type: file.read\n    path: a\n"
     "  - type: shell.exec\n", 7, "needs[1].type", "unknown need type 'shell.exec'"),
    ("AGENT_REQUEST v1\nrole: critic\nrequest_id: 1\nneeds:\n  - type: docdex.open\n", 5, "needs[0].path",
     "needs one of: path, doc_id"),
    ("AGENT_REQUEST v1\nrole: critic\nrequest_id: 1\nneeds: file.read\n", 4, "needs", "must be a list"),
    ("AGENT_REQUEST v1\nrole: critic\nrequest_id: 1\n", 1, "needs", "missing"),
    ("AGENT_REQUEST v2\nrole: critic\n", 1, "version", "unsupported version"),
    ("AGENT_REQUEST v1\nrole: critic\nneeds:\n  - type: file.read\n      path: x\n", 5, None, "indentation"),
    ('AGENT_REQUEST v1\nrole: critic\nrequest_id: "abc\nneeds: []\n', 3, None, "double-quoted string"),
    ('AGENT_REQUEST v1\n{"role": "critic", "needs": [}\n', 2, None, "invalid JSON"),
])
def test_errors_name_line_and_field(text: str, line: int, field: str | None, fragment: str) -> None:
    with pytest.raises(AgentRequestError) as info:
        parse_agent_request("Prose first.\n" + text)
    assert info.value.line == line + 1
    assert info.value.field == field
    assert fragment in str(info.value)
    assert str(info.value).startswith(f"AGENT_REQUEST line {line + 1}")


def test_no_request_at_all() -> None:
    with pytest.raises(AgentRequestError, match="no 'AGENT_REQUEST v1' found"):
        parse_agent_request("I think the answer is 42.")


@pytest.mark.parametrize(("text", "field", "fragment"), [
    ("AGENT_REQUEST v1\nrole: critic\nrequest_id: 1\nneeds: [file.read]\n", "needs[0]", "must be a mapping"),
    ("AGENT_REQUEST v1\nrole: critic\nrequest_id: 1\nneeds:\n  - type: docdex.search\n    query: [a, b]\n",
     "needs[0].query", "must be a string"),
    ("AGENT_REQUEST v1\nrole: critic\nrequest_id: [1, 2]\nneeds: []\n", "request_id", "single value"),
])
def test_flow_lists_where_scalars_belong_are_errors(text: str, field: str, fragment: str) -> None:
    with pytest.raises(AgentRequestError) as info:
        parse_agent_request(text)
    assert info.value.field == field and fragment in str(info.value)


def test_lenient_parse_replaces_the_role_and_skips_bad_needs_but_not_all() -> None:
    text = ("AGENT_REQUEST v1\nrequest_id: r\nneeds:\n  - type: docdex.snippet\n    path: a.py\n"
            "  - type: file.read\n    path: a.py\n")
    with pytest.raises(AgentRequestError, match="field role: missing"):
        parse_agent_request(text)
    request = parse_agent_request(text, role="architect", skip_bad_needs=True)
    assert request.role == "architect" and [n.type for n in request.needs] == ["file.read"]
    assert request.warnings == ("role_replaced: (missing) -> architect",
                                "need_skipped: line 4, field needs[0].doc_id: required for docdex.snippet")
    only_bad = "AGENT_REQUEST v1\nrole: architect\nneeds:\n  - type: docdex.snippet\n    path: a.py\n"
    with pytest.raises(AgentRequestError, match=r"line 4, field needs\[0\].doc_id"):
        parse_agent_request(only_bad, role="architect", skip_bad_needs=True)


def test_a_number_too_long_for_python_in_bare_json_is_no_request() -> None:
    with pytest.raises(AgentRequestError, match="no 'AGENT_REQUEST v1' found"):
        parse_agent_request('Here: {"role": "critic", "needs": [], "limit": ' + "9" * 5000 + "}")


def test_a_number_too_long_for_python_after_the_header_is_invalid_json() -> None:
    with pytest.raises(AgentRequestError, match=r"^AGENT_REQUEST line 2: invalid JSON: Exceeds the limit"):
        parse_agent_request('AGENT_REQUEST v1\n{"role": "critic", "needs": [], "limit": ' + "9" * 5000 + "}")
