"""The named-block parser (issue 20) reads untrusted model output: property tests.

Random prose, fences and names never crash it; it never yields a block that no file-naming
line precedes; a block under a naming line comes back byte for byte."""

from __future__ import annotations

import asyncio
import re
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codeloop.agent.call_forms import CallForms
from codeloop.agent.named_blocks import exact_name, named_blocks, numbered_listings, prose_name
from codeloop.agent.reply_reader import Reply
from codeloop.agent.reply_rescue import ReplyRescue
from codeloop.environments.local import LocalExecutionEnvironment
from codeloop.tools.sets import core_tools

FENCE_LINE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})", re.MULTILINE)

NAMES = st.from_regex(r"[a-z_][a-z0-9_]{0,7}(/[a-z_][a-z0-9_]{0,7})?\.(py|txt|json|md|js|toml)", fullmatch=True)
LANG = {"py": "python", "txt": "text", "json": "json", "md": "markdown", "js": "javascript", "toml": "toml"}
DECORATIONS = st.sampled_from(["{}", "**{}**", "`{}`", "# {}", "## `{}`:", "File: {}", "- {}", "{}:",
                               "Here is the updated `{}`:", "The new content of {} is:"])
PROSE = st.text(alphabet=st.characters(blacklist_characters="`~.:/\\\r", blacklist_categories=("Cs",)), max_size=60)
CONTENT_LINE = st.text(alphabet=st.characters(blacklist_characters="\n\r", blacklist_categories=("Cs",)), max_size=40)
FRAGMENTS = st.one_of(
    PROSE, NAMES, DECORATIONS.flatmap(lambda d: NAMES.map(d.format)),
    st.sampled_from(["```", "```python", "~~~", "````", "``` py", "", " ", "```json", "```bash"]),
    CONTENT_LINE,
)


def _line_at(text: str, start: int) -> str:
    end = text.find("\n", start)
    return text[start:] if end == -1 else text[start:end]


@settings(max_examples=400, deadline=None)
@given(st.lists(FRAGMENTS, max_size=25))
def test_random_replies_never_crash_and_every_block_follows_its_naming_line(fragments: list[str]) -> None:
    text = "\n".join(fragments)
    for block in named_blocks(text):
        line = _line_at(text, block.start)
        assert (exact_name(line) if block.exact else prose_name(line)) == block.path
        after = text[block.start + len(line) + 1:]
        between, fence_line = (after.split("\n", 2)[:2] if not FENCE_LINE.match(after) else ["", ""])
        assert FENCE_LINE.match(after) or (not between.strip() and FENCE_LINE.match(fence_line)), (text, block)
        assert block.content in text


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_any_text_at_all_never_crashes(text: str) -> None:
    named_blocks(text)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(PROSE, CONTENT_LINE.filter(lambda s: "." not in s),
                          st.sampled_from(["```", "```python", "~~~", ""])), max_size=25))
def test_no_naming_line_no_block(fragments: list[str]) -> None:
    # Lines with no dot name no file with an extension; undecorated bare words name none either.
    plain = str.maketrans("", "", "*#`_\"'-+>")
    text = "\n".join(f if f.startswith(("```", "~~~")) else f.translate(plain) for f in fragments)
    assert named_blocks(text) == []


@settings(max_examples=300, deadline=None)
@given(NAMES, DECORATIONS, st.lists(CONTENT_LINE, min_size=1, max_size=12), st.booleans(), st.booleans(),
       PROSE, PROSE)
def test_a_block_under_a_naming_line_round_trips_exactly(name: str, decoration: str, lines: list[str], blank: bool,
                                                          tagged: bool, before: str, after: str) -> None:
    content = "".join(line + "\n" for line in lines)
    if FENCE_LINE.search(content):
        content = content.replace("`", "'").replace("~", "-")
    naming = decoration.format(name)
    prose = not (exact_name(naming) == name)
    info = LANG[name.rsplit(".", 1)[1]] if tagged or prose else ""
    text = f"{before}\n\n{naming}\n{chr(10) if blank else ''}```{info}\n{content}```\n{after}"
    (block,) = named_blocks(text)
    assert (block.path, block.content, block.exact) == (name, content, not prose)


def test_examples_of_naming_lines() -> None:
    assert [exact_name(x) for x in ("solution.py", "**solution.py**", "File: solution.py", "# solution.py",
                                    "`src/app.py`:", "Filename: a.txt", "Output:", "Here is solution.py")] == [
        "solution.py", "solution.py", "solution.py", "solution.py", "src/app.py", "a.txt", "Output", None]
    assert prose_name("Here's the implementation in `solution.py`:") == "solution.py"
    assert prose_name("Compare a.py and b.py:") is None and prose_name("See solution.py") is None


RESCUE_FRAGMENTS = st.one_of(
    FRAGMENTS, st.sampled_from(["app.py", "../out.py", "/etc/passwd", "notes.txt", "Makefile", "**Makefile**",
                                "def run():", "    return 1", "x = (", "{\"a\": 1}", "## app.py", "## notes.txt",
                                "  1 | def run():", "  2 |     return 1", "  3 |", "  1 | x = (", "  2 | run()"]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(RESCUE_FRAGMENTS, max_size=20))
def test_the_rescue_of_any_reply_never_raises_and_only_edits_named_files(fragments: list[str]) -> None:
    text = "\n".join(fragments)
    schemas = {t.name: t.definition.parameters for t in core_tools()}
    rescue = ReplyRescue(schemas, CallForms(schemas, "tagged"))
    with tempfile.TemporaryDirectory() as root:
        (Path(root) / "app.py").write_text("def run():\n    return 0\n\n\nrun()\n")
        (Path(root) / "Makefile").write_text("all:\n\techo hi\n")
        reply = asyncio.run(rescue.rescue(Reply((), text), LocalExecutionEnvironment(root)))
    named = {b.path for b in [*named_blocks(text), *numbered_listings(text)]}
    for call in reply.calls:
        if call.parse_error is None:
            assert call.name in ("write_file", "edit_file") and call.arguments["file_path"] in named


# -- numbered listings: the form codeloop shows files in, copied back ----------------------------


def _listing(lines: list[str], first: int = 1) -> str:
    width = max(3, len(str(first + len(lines) - 1)))
    return "\n".join(f"{n:>{width}} | {line}" for n, line in enumerate(lines, start=first))


@settings(max_examples=300, deadline=None)
@given(NAMES, st.sampled_from(["## {}", "{}", "**{}**", "## {} (a test of x.py)"]),
       st.lists(CONTENT_LINE, min_size=1, max_size=15), st.booleans(), st.sampled_from(["", "\n", "\n\n# Task\n\nDo it."]))
def test_a_listing_under_its_files_name_round_trips_exactly(name: str, heading: str, lines: list[str], blank: bool,
                                                            after: str) -> None:
    lines = [line.rstrip("\r") for line in lines]
    text = f"Here it is.\n{heading.format(name)}\n{chr(10) if blank else ''}{_listing(lines)}{after}"
    (listing,) = numbered_listings(text)
    assert (listing.path, listing.content, listing.numbered) == (name, "".join(x + "\n" for x in lines), True)
    assert text[listing.start:].startswith(heading.format(name))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(FRAGMENTS, st.builds(lambda n, c: f"{n:>3} | {c}", st.integers(0, 12), CONTENT_LINE)),
                max_size=30))
def test_random_text_never_crashes_and_every_listing_is_numbered_from_one_under_its_name(fragments: list[str]) -> None:
    text = "\n".join(fragments)
    for listing in numbered_listings(text):
        heading = _line_at(text, listing.start)
        assert listing.path in heading
        body = text[listing.start + len(heading) + 1:].lstrip("\n").split("\n")
        count = listing.content.count("\n")
        assert [row.split(" | ", 1)[0].strip().rstrip("|").strip() for row in body[:count]] == [
            str(n) for n in range(1, count + 1)]


def test_what_is_no_listing() -> None:
    assert numbered_listings("## app.py\n 40 | x = 1\n 41 | y = 2\n") == []  # a view from line 40
    assert numbered_listings("## app.py\n  1 | x = 1\n  3 | y = 2\n") == []  # a number skipped
    assert numbered_listings("## app.py\n  1 | x = 1\ny = 2\n") == []  # code going on unnumbered
    assert numbered_listings("  1 | x = 1\n  2 | y = 2\n") == []  # no file named
    assert numbered_listings("Output:\n  1 | x = 1\n") == []  # a word, not a file name
