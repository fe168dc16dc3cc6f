"""SSE parsing (unified-llm spec §7.7): WHATWG rules, any chunking, cut streams."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeloop.llm.errors import StreamError
from codeloop.llm.sse import SSEEvent, SSEParser, aiter_sse, require_final_event


def parse_all(chunks: list[bytes]) -> list[SSEEvent]:
    parser = SSEParser()
    out: list[SSEEvent] = []
    for chunk in chunks:
        out.extend(parser.feed(chunk))
    return out + parser.finish()


def test_7_7_event_data_multiline_comments_and_retry() -> None:
    stream = (
        b": keep-alive comment\n"
        b"event: message_start\n"
        b"data: {\"a\":\n"
        b"data: 1}\n"
        b"id: 7\n"
        b"retry: 1500\n"
        b"\n"
        b"data:no-space\n\n"
    )
    assert parse_all([stream]) == [
        SSEEvent("message_start", '{"a":\n1}', "7", 1500),
        SSEEvent("message", "no-space", "7", None),
    ]


def test_7_7_crlf_and_cr_line_ends_split_across_chunks() -> None:
    events = parse_all([b"data: a\r", b"\n\r", b"\ndata: b\r\r"])
    assert [e.data for e in events] == ["a", "b"]


def test_7_7_event_without_data_is_not_dispatched_and_type_resets() -> None:
    assert parse_all([b"event: ping\n\ndata: x\n\n"]) == [SSEEvent("message", "x")]


def test_7_7_multibyte_character_split_between_chunks() -> None:
    raw = "data: héllo ✓\n\n".encode()
    assert parse_all([raw[:8], raw[8:14], raw[14:]])[0].data == "héllo ✓"


def test_7_7_unterminated_event_at_end_is_dropped() -> None:
    assert parse_all([b'data: {"choices": [\n']) == []


async def test_7_7_aiter_sse_over_async_chunks() -> None:
    async def chunks():  # type: ignore[no-untyped-def]
        for c in [b"da", b"ta: 1\n", b"\nda", b"ta: [DONE]\n\n"]:
            yield c

    assert [e.data async for e in aiter_sse(chunks())] == ["1", "[DONE]"]


def test_stream_without_final_event_is_a_stream_error() -> None:
    with pytest.raises(StreamError, match=r"ended before its final event \(data: \[DONE\]\)"):
        require_final_event("llama.cpp", False, "data: [DONE]")
    require_final_event("llama.cpp", True, "data: [DONE]")


_field_text = st.text(
    alphabet=st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)), max_size=30
)
_event = st.tuples(
    st.one_of(st.none(), _field_text.filter(lambda s: s != "")),
    st.lists(_field_text, min_size=1, max_size=4),
)


@settings(max_examples=300, deadline=None)
@given(
    events=st.lists(_event, max_size=8),
    newline=st.sampled_from(["\n", "\r\n", "\r"]),
    cuts=st.lists(st.integers(min_value=0, max_value=2000), max_size=12),
    comment=st.booleans(),
)
def test_7_7_any_chunking_yields_the_same_events(
    events: list[tuple[str | None, list[str]]], newline: str, cuts: list[int], comment: bool
) -> None:
    text = ""
    for name, data_lines in events:
        if comment:
            text += ": c" + newline
        if name is not None:
            text += f"event: {name}" + newline
        text += "".join(f"data: {d}" + newline for d in data_lines) + newline
    raw = text.encode()
    points = sorted({min(c, len(raw)) for c in cuts})
    chunks = [raw[a:b] for a, b in zip([0, *points], [*points, len(raw)], strict=True)]
    expected = [(name or "message", "\n".join(data_lines)) for name, data_lines in events]
    assert [(e.event, e.data) for e in parse_all(chunks)] == expected


@given(st.binary(max_size=500))
def test_7_7_arbitrary_bytes_never_crash(raw: bytes) -> None:
    events = parse_all([raw[: len(raw) // 2], raw[len(raw) // 2 :]])
    assert all(isinstance(e.data, str) for e in events)
