"""Property tests: untrusted queries never break search; chunking keeps every line."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codeloop.index import CodeIndex
from codeloop.index.chunks import code_chunks, document_chunks


@pytest.fixture(scope="module")
def small_index(tmp_path_factory: pytest.TempPathFactory) -> CodeIndex:
    root = tmp_path_factory.mktemp("props")
    (root / "a.py").write_text("def alpha(x):\n    return x * 2  # \"quoted\" AND OR NEAR\n")
    (root / "b.md").write_text("# Title\n\nSome * text with (parens) and 'quotes'.\n")
    index = CodeIndex(root, db_path=root.parent / f"{root.name}.sqlite")
    index.build()
    return index


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=st.text(max_size=40), mode=st.sampled_from(["auto", "words", "substring"]))
def test_any_query_returns_hits_or_nothing(small_index: CodeIndex, query: str, mode: str) -> None:
    hits = small_index.search(query, 5, mode)  # type: ignore[arg-type]
    assert all(h.path in {"a.py", "b.md"} for h in hits)


def _reassembled(chunks: list, line_count: int) -> list[str]:  # type: ignore[type-arg]
    lines = [""] * line_count
    for chunk in chunks:
        for offset, text in enumerate(chunk.body.split("\n")):
            lines[chunk.start_line - 1 + offset] = text
    return lines


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["# H1", "## H2", "text", "", "```", "Title", "=====", "    code"]), max_size=300))
def test_document_chunks_cover_every_nonblank_line(lines: list[str]) -> None:
    text = "\n".join(lines)
    chunks = document_chunks(text)
    assert all(c.start_line <= c.end_line for c in chunks)
    rebuilt = _reassembled(chunks, len(text.split("\n")))
    assert [line for line in rebuilt if line.strip()] == [line for line in text.split("\n") if line.strip()]


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 400))
def test_code_chunks_are_contiguous_windows(line_count: int) -> None:
    text = "\n".join(f"line {i}" for i in range(line_count))
    chunks = code_chunks(text, [(1, "first")])
    assert _reassembled(chunks, len(text.split("\n"))) == text.split("\n")
    assert [c.start_line for c in chunks] == list(range(1, max(line_count, 1) + 1, 60))
