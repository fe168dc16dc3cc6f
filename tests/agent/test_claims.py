"""File names in a text (:func:`codeloop.agent.claims.file_names`), by their form alone: what
finds the files a task names. (The claim checks that read the model's prose went with issue 33.)"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from codeloop.agent.claims import file_names


def test_file_names_need_a_known_extension_or_an_existing_file() -> None:
    assert file_names("see os.path and e.g. the version 3.11 of main.py") == ["main.py"]
    assert file_names("the Makefile.inc file", exists=lambda n: n == "Makefile.inc") == ["Makefile.inc"]


@given(st.text(max_size=400))
def test_any_text_gives_names_it_holds_without_raising(text: str) -> None:
    assert all(name in text for name in file_names(text))


@given(st.sampled_from(["result.txt", "src/app.py", "data.json", "notes.md"]),
       st.sampled_from(["Fix {}.", "Rename the module in `{}`.", "{} should print 3", "in {}, add a flag"]))
def test_a_name_is_found_whatever_the_words_around_it(name: str, form: str) -> None:
    assert file_names(form.format(name)) == [name]
