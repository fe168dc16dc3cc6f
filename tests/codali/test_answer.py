"""Answering requests: every need type, warnings for every failure, budgets (spec §2, §3, §5)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from codeloop.codali.answer import answer_request
from codeloop.codali.request import parse_agent_request
from codeloop.index import CodeIndex


def request(*needs: str, role: str = "librarian") -> str:
    return f"AGENT_REQUEST v1\nrole: {role}\nrequest_id: r-1\nneeds:\n" + "".join(needs)


async def answer(repo: Path, text: str, **kwargs: Any) -> Any:
    return await answer_request(parse_agent_request(text), repo, **kwargs)


async def test_3_all_results_in_one_response_with_meta(repo: Path) -> None:
    response = await answer(repo, request(
        "  - type: docdex.search\n    query: login page\n    limit: 3\n",
        "  - type: file.read\n    path: src/public/index.html\n",
        "  - type: docdex.impact\n    file: src/auth/login.ts\n"))
    assert response.request_id == "r-1"
    assert [r["type"] for r in response.results] == ["docdex.search", "file.read", "docdex.impact"]
    assert response.results[1]["content"] == (repo / "src/public/index.html").read_text()
    assert "truncated" not in response.results[1]
    assert response.results[2]["outbound"] == ["src/auth/hash.ts"]
    assert response.repo_root == str(repo.resolve())
    assert response.warnings == ()
    assert isinstance(response.elapsed_ms, int) and response.elapsed_ms >= 0


async def test_search_hits_anchor_documents_at_headings(repo: Path) -> None:
    response = await answer(repo, request("  - type: docdex.search\n    query: credentials\n"))
    (hit,) = response.results[0]["hits"]
    assert (hit["path"], hit["heading"], hit["line"]) == ("docs/guide.md", "Login flow", 5)


async def test_5_missing_file_is_a_warning_not_a_failure(repo: Path) -> None:
    response = await answer(repo, request("  - type: file.read\n    path: src/public/missing.html\n",
                                          "  - type: file.read\n    path: src/auth/hash.ts\n"))
    assert response.warnings == ("file_not_found: src/public/missing.html",)
    assert [r["path"] for r in response.results] == ["src/auth/hash.ts"]


async def test_paths_cannot_leave_the_repository(repo: Path, tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("s3cret")
    (repo / "link.txt").symlink_to(tmp_path / "secret.txt")
    response = await answer(repo, request("  - type: file.read\n    path: ../secret.txt\n",
                                          "  - type: file.read\n    path: link.txt\n",
                                          "  - type: docdex.open\n    path: /etc/passwd\n",
                                          "  - type: file.list\n    root: ..\n"))
    assert response.results == ()
    assert response.warnings == ("path_outside_repo: ../secret.txt", "path_outside_repo: link.txt",
                                 "path_outside_repo: /etc/passwd", "path_outside_repo: ..")


async def test_web_is_unavailable_offline(repo: Path) -> None:
    response = await answer(repo, request("  - type: docdex.web\n    query: html5\n    force_web: true\n"))
    assert response.results == () and response.warnings == ("web_unavailable",)


async def test_budget_truncates_content_and_says_so(repo: Path) -> None:
    response = await answer(repo, request("  - type: file.read\n    path: big.txt\n",
                                          "  - type: file.read\n    path: src/auth/hash.ts\n"),
                            content_budget=100)
    first, second = response.results
    assert first["truncated"] is True and first["total_chars"] == len((repo / "big.txt").read_text())
    assert len(first["content"]) == 100
    assert second["truncated"] is True and second["content"] == ""
    assert response.warnings[0] == f"content_truncated: big.txt (100 of {first['total_chars']} chars)"


async def test_stale_index_is_refreshed_and_warned(repo: Path) -> None:
    CodeIndex(repo).build()
    (repo / "src" / "late.py").write_text("def latecomer():\n    pass\n")
    response = await answer(repo, request("  - type: docdex.symbols\n    file: src/late.py\n"))
    assert response.warnings == ("docdex_index_stale",)
    assert [s["name"] for s in response.results[0]["symbols"]] == ["latecomer"]


async def test_docdex_open_ranges_and_doc_ids(repo: Path) -> None:
    response = await answer(repo, request(
        "  - type: docdex.open\n    path: big.txt\n    start_line: 3\n    end_line: 4\n",
        "  - type: docdex.open\n    doc_id: big.txt#L10\n    window: 1\n",
        "  - type: docdex.snippet\n    doc_id: big.txt#L100\n    window: 1\n"))
    ranged, by_doc, snippet = response.results
    assert (ranged["content"], ranged["start_line"], ranged["end_line"], ranged["total_lines"]) == (
        "line 3\nline 4\n", 3, 4, 200)
    assert by_doc["content"] == "line 9\nline 10\nline 11\n"
    assert (snippet["content"], snippet["start_line"]) == ("line 99\nline 100\nline 101", 99)


async def test_symbols_ast_tree_and_diagnostics(repo: Path) -> None:
    response = await answer(repo, request(
        "  - type: docdex.symbols\n    file: src/app.py\n",
        "  - type: docdex.ast\n    file: src/app.py\n    maxDepth: 1\n",
        "  - type: docdex.tree\n    maxDepth: 1\n",
        "  - type: docdex.impact_diagnostics\n    file: src/app.py\n",
        "  - type: file.list\n    root: src\n    pattern: '**/*.ts'\n"))
    symbols, ast, tree, diagnostics, listing = response.results
    assert [s["qualified_name"] for s in symbols["symbols"]] == ["App", "App.run"]
    assert ast["ast"]["type"] == "module"
    assert [c["type"] for c in ast["ast"]["children"]] == ["import_statement", "import_statement",
                                                          "class_definition"]
    assert all("children" not in c for c in ast["ast"]["children"])  # maxDepth 1: one level below the root
    assert tree["tree"].split("\n") == ["big.txt", "docs/ (1 files)", "src/ (4 files)"]
    assert [(d["line"], d["status"]) for d in diagnostics["diagnostics"]] == [(6, "dynamic")]
    assert listing["files"] == ["src/auth/hash.ts", "src/auth/login.ts"]


async def test_unknown_files_for_index_needs_are_warnings(repo: Path) -> None:
    response = await answer(repo, request("  - type: docdex.impact\n    file: nope.ts\n",
                                          "  - type: docdex.symbols\n    file: nope.py\n",
                                          "  - type: docdex.snippet\n    doc_id: nope.md#L1\n"))
    assert response.results == ()
    assert response.warnings == ("file_not_found: nope.ts", "file_not_found: nope.py", "doc_not_found: nope.md#L1")


async def test_request_parse_warnings_are_repeated(repo: Path) -> None:
    response = await answer(repo, "AGENT_REQUEST v1\nrole: builder\nneeds: []\n")
    assert response.warnings == ("request_id_missing",) and response.results == ()


def test_index_lives_outside_the_repository(repo: Path, _index_dir: Path) -> None:
    assert not any(name.endswith(".sqlite") for _, _, files in os.walk(repo) for name in files)


async def test_directory_and_binary_reads_are_warnings(repo: Path) -> None:
    (repo / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR")
    response = await answer(repo, request("  - type: file.read\n    path: src\n",
                                          "  - type: file.read\n    path: logo.png\n"))
    assert response.results == ()
    assert response.warnings == ("not_a_file: src", "file_binary: logo.png")


async def test_listing_below_a_file_is_a_file_list_failed_warning(repo: Path) -> None:
    response = await answer(repo, request("  - type: file.list\n    root: big.txt\n",
                                          "  - type: file.read\n    path: src/auth/hash.ts\n"))
    assert [r["type"] for r in response.results] == ["file.read"]
    assert response.warnings == (
        "file_list_failed: 'big.txt' is a file, not a directory; glob searches below a directory",)
