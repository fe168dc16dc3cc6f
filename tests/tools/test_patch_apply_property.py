"""Property: any patch against any file either applies or fails with a PatchError, and a
successful update equals a reference splice of the located lines (Appendix A)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from codeloop.tools.errors import PatchError
from codeloop.tools.patch_apply import apply_replacements, compute_replacements
from codeloop.tools.patch_parser import UpdateChunk

_line = st.sampled_from(["a", "b", "c", " a", "a ", "\u2013", "-", "", "x\r"])


@st.composite
def _chunks(draw: st.DrawFn) -> list[UpdateChunk]:
    return [
        UpdateChunk(
            draw(st.one_of(st.none(), _line)),
            tuple(draw(st.lists(_line, max_size=3))),
            tuple(draw(st.lists(_line, max_size=3))),
            draw(st.booleans()),
        )
        for _ in range(draw(st.integers(1, 3)))
    ]


@settings(max_examples=400, deadline=None)
@given(st.lists(_line, max_size=12), _chunks())
def test_a_update_applies_or_raises_patch_error(lines: list[str], chunks: list[UpdateChunk]) -> None:
    try:
        replacements = compute_replacements(lines, "f", chunks)
    except PatchError as exc:
        assert str(exc).startswith("Failed to find")
        return
    result = apply_replacements(lines, replacements)
    reference = list(lines)
    for start, old_len, new in reversed(replacements):
        del reference[start : start + old_len]
        reference[start:start] = list(new)
    assert result == reference
