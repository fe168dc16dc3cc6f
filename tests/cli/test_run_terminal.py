"""Line splitting of what is typed or piped into ``codeloop run`` (the chat and steering
input): however the bytes arrive in chunks, the same lines come out, nothing is lost."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from codeloop.cli.run_terminal import take_lines


def feed(chunks: list[bytes]) -> tuple[list[str], bytes]:
    lines: list[str] = []
    buffer = b""
    for chunk in chunks:
        got, buffer = take_lines(buffer + chunk)
        lines += got
    return lines, buffer


@given(st.lists(st.binary(max_size=40), max_size=12))
def test_chunking_does_not_change_the_lines(chunks: list[bytes]) -> None:
    whole = b"".join(chunks)
    assert feed(chunks) == take_lines(whole)
    lines, rest = take_lines(whole)
    assert len(lines) == whole.count(b"\n") and b"\n" not in rest


@given(st.lists(st.text(alphabet=st.characters(blacklist_characters="\n\r", blacklist_categories=("Cs",)), max_size=20), max_size=8),
       st.integers(min_value=1, max_value=7))
def test_utf8_text_survives_any_split(texts: list[str], size: int) -> None:
    data = "".join(f"{t}\r\n" if i % 2 else f"{t}\n" for i, t in enumerate(texts)).encode()
    chunks = [data[i:i + size] for i in range(0, len(data), size)]
    assert feed(chunks) == (texts, b"")


def test_unfinished_line_waits_and_invalid_utf8_is_replaced() -> None:
    assert take_lines(b"steer this\nhalf") == (["steer this"], b"half")
    assert take_lines(b"caf\xc3\n\xff\n") == (["caf\ufffd", "\ufffd"], b"")
