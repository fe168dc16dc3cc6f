"""Full-text (BM25) and substring search, document headings as anchors, snippets."""

from __future__ import annotations

import pytest

from codeloop.index import CodeIndex, IndexNotBuiltError, NotIndexedError


def test_document_hit_is_anchored_at_its_heading(built: CodeIndex) -> None:
    (hit,) = built.search("flux capacitor")
    assert (hit.path, hit.heading, hit.line) == ("docs/guide.md", "Installation", 7)
    assert "Run the flux capacitor setup." in hit.snippet


def test_heading_inside_code_fence_is_not_a_heading(built: CodeIndex) -> None:
    (hit,) = built.search("engine", limit=1, path_prefix="docs")
    assert hit.heading == "Usage"


def test_bm25_ranks_the_defining_file_first(built: CodeIndex) -> None:
    hits = built.search("booted")
    assert [h.path for h in hits] == ["pkg/helpers.py"]
    assert hits[0].score > 0


def test_substring_search_with_punctuation(built: CodeIndex) -> None:
    (hit,) = built.search("helpers.boot(")
    assert (hit.path, hit.line) == ("pkg/core.py", 7)


def test_substring_inside_an_identifier(built: CodeIndex) -> None:
    paths = {h.path for h in built.search("ebrafis")}
    assert paths == {"keep.log"}


def test_words_match_any_when_not_all_match(built: CodeIndex) -> None:
    assert {h.path for h in built.search("zebrafish nonexistentword")} == {"keep.log"}


def test_fts_syntax_in_a_query_is_treated_as_text(built: CodeIndex) -> None:
    assert [h.path for h in built.search("booted* -")] == ["pkg/helpers.py"]
    assert [h.path for h in built.search('"booted" OR')] == ["pkg/helpers.py"]
    assert built.search('NEAR(" *') == []
    assert built.search("") == []


def test_snippet_by_doc_id_returns_a_window(built: CodeIndex) -> None:
    hit = built.search("booted")[0]
    path, first, last, text = built.snippet(hit.doc_id, window=1)
    assert (path, first, last) == ("pkg/helpers.py", 5, 7)
    assert text.split("\n") == ["def boot():", "    return 'booted'", ""]


def test_unknown_file_is_a_clear_error(built: CodeIndex) -> None:
    with pytest.raises(NotIndexedError, match=r"nope\.py is not in the index"):
        built.snippet("nope.py#L1")


def test_query_before_build_says_how_to_build(sample_repo: object) -> None:
    with pytest.raises(IndexNotBuiltError, match="codeloop index build"):
        CodeIndex(str(sample_repo)).search("x")


def test_tree_lists_indexed_files_and_cuts_at_depth(built: CodeIndex) -> None:
    tree = built.tree(max_depth=2).split("\n")
    assert "pkg/" in tree and "  core.py" in tree
    assert "  src/ (2 files)" in tree
    assert all("build" not in line for line in tree)


def test_definition_of_the_named_symbol_comes_first(built: CodeIndex, sample_repo: object) -> None:
    hits = built.search("boot")
    assert (hits[0].path, hits[0].line, hits[0].heading) == ("pkg/helpers.py", 5, "boot")
    assert "pkg/core.py" in {h.path for h in hits[1:]}
    assert built.search("add")[0].path == "c/util.c"


def test_snippet_centres_on_the_line_matching_most_words(built: CodeIndex) -> None:
    (hit,) = built.search("capacitor setup")
    assert hit.line == 7
