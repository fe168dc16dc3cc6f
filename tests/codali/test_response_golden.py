"""The text form of CODALI_RESPONSE v1, checked against the spec's examples (§1, §3, §5)."""

from __future__ import annotations

from codeloop.codali.response import CodaliResponse, dumps
from codeloop.codali.yamlish import parse_block, plain

SPEC_5_ERROR = """CODALI_RESPONSE v1
request_id: "r-9"
results: []
meta:
  warnings:
    - "docdex_search_failed"
    - "file_not_found: src/public/index.html"
"""

SPEC_3_CRITIC = """CODALI_RESPONSE v1
request_id: "critic-1700000000"
results:
  - type: "critic.result"
    status: "FAIL"
    reasons:
      - "touched files outside allowed paths: src/x.js"
    suggested_fixes:
      - "Address: touched files outside allowed paths: src/x.js"
    touched_files:
      - "src/public/index.html"
    plan_targets:
      - "src/public/index.html"
meta:
  warnings:
    - "critic_failed"
"""


def test_5_error_response_text() -> None:
    response = CodaliResponse("r-9", (), ("docdex_search_failed", "file_not_found: src/public/index.html"))
    assert dumps(response) == SPEC_5_ERROR


def test_3_critic_result_text() -> None:
    response = CodaliResponse("critic-1700000000", ({
        "type": "critic.result", "status": "FAIL",
        "reasons": ["touched files outside allowed paths: src/x.js"],
        "suggested_fixes": ["Address: touched files outside allowed paths: src/x.js"],
        "touched_files": ["src/public/index.html"], "plan_targets": ["src/public/index.html"]},), ("critic_failed",))
    assert dumps(response) == SPEC_3_CRITIC


def test_1_file_content_is_a_readable_block_that_parses_back() -> None:
    content = "<html>\n  <body>hi</body>\n</html>\n"
    response = CodaliResponse("u1", ({"type": "file.read", "path": "src/public/index.html", "content": content},),
                              (), "/repo", 12)
    text = dumps(response)
    assert "    content: |\n      <html>\n        <body>hi</body>\n      </html>\n" in text
    assert text.endswith("meta:\n  repo_root: \"/repo\"\n  warnings: []\n  elapsed_ms: 12\n")
    parsed = plain(parse_block(text.split("\n", 1)[1]))
    assert parsed["results"][0]["content"] == content
    assert parsed["meta"] == {"repo_root": "/repo", "warnings": [], "elapsed_ms": 12}


def test_json_form() -> None:
    response = CodaliResponse("u1", ({"type": "docdex.tree", "tree": "a.py"},), ("w",), "/r", 1)
    assert response.to_json() == {"CODALI_RESPONSE": "v1", "request_id": "u1",
                                  "results": [{"type": "docdex.tree", "tree": "a.py"}],
                                  "meta": {"repo_root": "/r", "warnings": ["w"], "elapsed_ms": 1}}
