"""Loop detection (loop spec §2.10)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from codeloop.agent.guards.loop_warning import detect_loop, loop_warning


def test_2_10_warning_text_is_verbatim() -> None:
    assert loop_warning(10) == (
        "Loop detected: the last 10 tool calls follow a repeating pattern. Try a different approach."
    )


def test_2_10_same_call_ten_times_is_a_loop() -> None:
    assert detect_loop(["a"] * 10, 10)


def test_2_10_cycles_of_two_and_three_are_loops_when_window_divides() -> None:
    assert detect_loop(["a", "b"] * 5, 10)
    assert detect_loop(["a", "b", "c"] * 4, 12)
    # 10 is not a multiple of 3: a 3-cycle over a window of 10 is not checked (§2.10)
    assert not detect_loop((["a", "b", "c"] * 4)[:10], 10)


def test_2_10_fewer_calls_than_window_is_not_a_loop() -> None:
    assert not detect_loop(["a"] * 9, 10)


def test_2_10_varied_calls_are_not_a_loop() -> None:
    assert not detect_loop([str(i) for i in range(10)], 10)


@given(st.lists(st.sampled_from("abcd"), max_size=30), st.integers(min_value=0, max_value=12))
def test_2_10_detector_never_raises_and_agrees_with_definition(calls: list[str], window: int) -> None:
    got = detect_loop(calls, window)
    if window == 0 or len(calls) < window:
        assert not got
        return
    recent = calls[-window:]
    expected = any(
        window % n == 0 and all(recent[i] == recent[i % n] for i in range(window)) for n in (1, 2, 3)
    )
    assert got == expected
