"""Relay inbox parsing: ``parse_inbox`` on generated replies of 5 to 50 MB (goal: 50 MB in
under 0.5 s, time linear in size).

A reply mixes prose, CREATE_FILE blocks of Python-like code full of ``[`` brackets,
EDIT_FILE, RUN_COMMAND and READ_FILE blocks. References, side by side:

- ``naive``: the spec's algorithm as the original agent runs it (split into lines, trim
  each, test each for every tag), building the same command values; outputs checked equal.
- ``splitlines``: just splitting the text into lines, a floor for any line-based parser.

Prints medians, MB/s, seconds per MB (flat = linear) and ratios; asserts nothing.

    .venv/bin/python benchmarks/relay_parse.py [--sizes 5,10,25,50] [--runs 3]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from codeloop.relay.commands import COMMAND_NAMES, SELF_CLOSING, RelayCommand
from codeloop.relay.parser import _build_self_closing, _build_with_body, _parse_attributes, parse_inbox

_CODE = "".join(f"def f{j}(xs):\n    return [x * {j} for x in xs if x[0] != ']']\n" for j in range(40))
_BLOCK = (
    "Now I will update the module; the list [a, b] stays as is.\n\n"
    '[CREATE_FILE path="src/pkg/mod.py"]\n' + _CODE + "[/CREATE_FILE]\n"
    '[EDIT_FILE path="src/pkg/mod.py" start_line="3" end_line="4"]\n    return []\n[/EDIT_FILE]\n'
    "[RUN_COMMAND]\npython -m pytest -q tests/test_mod.py\n[/RUN_COMMAND]\n"
    '[READ_FILE path="src/pkg/mod.py"]\n'
)


def make_reply(size_bytes: int, shape: str = "dense") -> str:
    """``dense``: many small blocks (one command per ~700 bytes); ``bigfile``: one
    CREATE_FILE whose body is the whole size (a pasted data file)."""
    if shape == "bigfile":
        return '[CREATE_FILE path="data.py"]\n' + _CODE * (size_bytes // len(_CODE) + 1) + "[/CREATE_FILE]\n"
    return _BLOCK * (size_bytes // len(_BLOCK) + 1)


def naive_parse(text: str) -> list[RelayCommand]:
    """The spec's algorithm as the original agent runs it: split into lines, trim each,
    test it against every tag, collect body lines until the closing line. Builds the same
    command values as ``parse_inbox`` (for well-formed input, as generated here)."""
    lines = text.split("\n")
    commands: list[RelayCommand] = []
    i = 0
    while i < len(lines):
        trimmed = lines[i].strip()
        for name in COMMAND_NAMES:
            if trimmed.startswith("[" + name) and trimmed[len(name) + 1 : len(name) + 2] in (" ", "]"):
                parsed = _parse_attributes(name, trimmed[len(name) + 1 :])
                assert not isinstance(parsed, str)
                attrs, _ = parsed
                if name in SELF_CLOSING:
                    commands.append(_build_self_closing(name, attrs, i + 1))
                    break
                closing = f"[/{name}]"
                j = i + 1
                while j < len(lines) and lines[j].strip() != closing:
                    j += 1
                body = "".join(line + "\n" for line in lines[i + 1 : j])
                commands.append(_build_with_body(name, attrs, body, i + 1))
                i = j
                break
        i += 1
    return commands


def median_time(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="5,10,25,50", help="reply sizes in MB")
    parser.add_argument("--runs", type=int, default=3)
    options = parser.parse_args()
    for shape in ("dense", "bigfile"):
        run_shape(shape, options.sizes, options.runs)
    print("goal: 50 MB under 0.5 s; s/MB flat across sizes means linear time")


def run_shape(shape: str, sizes: str, runs: int) -> None:
    print(f"shape: {shape}")
    print(
        f"{'MB':>5} {'ours s':>8} {'MB/s':>7} {'s/MB':>7} {'naive s':>8} {'ours/naive':>10} {'splitlines s':>12} {'ours/split':>10}"
    )
    for mb in (int(s) for s in sizes.split(",")):
        text = make_reply(mb * 1_000_000, shape)
        size = len(text.encode()) / 1e6
        assert parse_inbox(text) == naive_parse(text), "reference disagrees"
        ours = median_time(lambda t=text: parse_inbox(t), runs)
        naive = median_time(lambda t=text: naive_parse(t), runs)
        split = median_time(lambda t=text: t.splitlines(), runs)
        print(
            f"{size:5.1f} {ours:8.3f} {size / ours:7.0f} {ours / size:7.4f} {naive:8.3f} "
            f"{ours / naive:10.2f} {split:12.3f} {ours / split:10.2f}"
        )


if __name__ == "__main__":
    main()
