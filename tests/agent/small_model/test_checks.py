"""The checks of a candidate come from the workspace (issue 33): the changed files, the
project's imports, its tests and doctests, the commands the session ran; and the ranking
puts a checked change first and an unchecked or empty one last. The checks that run commands
are run here with real python3 in a copy of the workspace, as the scratch environment will."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from codeloop.agent.small_model.checks import (
    Check,
    CheckResult,
    command_checks,
    import_checks,
    module_of,
    parse_checks,
)
from codeloop.agent.small_model.choose import Candidate, choose, rank

SHOP = {
    "shop.py": "def calc_total(items):\n    return sum(items)\n",
    "main.py": "from shop import calc_total\n\nprint(calc_total([1, 2]))\n",
    "test_shop.py": "import unittest\n\nfrom shop import calc_total\n\n\nclass T(unittest.TestCase):\n"
                    "    def test_sum(self):\n        self.assertEqual(calc_total([1, 2]), 3)\n",
    "notes.txt": "calc_total is the main function\n",
}


def test_module_names_follow_the_root_and_src_layouts() -> None:
    assert [module_of(p) for p in ("a.py", "pkg/__init__.py", "pkg/m.py", "src/pkg/m.py", "x.txt", "my-file.py")] == [
        "a", "pkg", "pkg.m", "pkg.m", None, None]


def test_changed_files_must_parse() -> None:
    results = parse_checks({"a.py": "def f(:\n", "b.json": '{"port": 8080,}', "c.toml": "x = 1\n",
                            "d.py": "x = 1\n", "gone.py": None, "e.txt": "anything"})
    assert [(r.check.name, r.passed) for r in results] == [
        ("parse a.py", False), ("parse b.json", False), ("parse c.toml", True), ("parse d.py", True)]
    assert results[0].output.startswith("a.py:1: ")


def test_a_rename_left_half_done_breaks_the_import_check_and_the_whole_rename_passes() -> None:
    half = {**SHOP, "shop.py": "def compute_total(items):\n    return sum(items)\n"}
    [result] = import_checks(half, ["shop.py"])
    assert not result.passed
    assert result.output.splitlines() == ["main.py:1: shop has no name 'calc_total'",
                                          "test_shop.py:3: shop has no name 'calc_total'"]
    whole = {**half, "main.py": SHOP["main.py"].replace("calc_total", "compute_total"),
             "test_shop.py": SHOP["test_shop.py"].replace("calc_total", "compute_total")}
    assert [r.passed for r in import_checks(whole, ["shop.py", "main.py", "test_shop.py"])] == [True]


def test_a_deleted_module_still_imported_is_caught_and_unrelated_imports_give_no_check() -> None:
    after = {k: v for k, v in SHOP.items() if k != "shop.py"}
    [result] = import_checks(after, ["shop.py"])
    assert "main.py:1: no module named 'shop' in the project" in result.output
    assert import_checks(SHOP, ["notes.txt"]) == []  # no import touches the change: no check


def test_a_module_split_into_a_package_resolves_through_its_init() -> None:
    after = {"utils/__init__.py": "from .strings import slugify\nfrom .numbers import clamp\n",
             "utils/strings.py": "def slugify(s):\n    return s\n", "utils/numbers.py": "def clamp(x):\n    return x\n",
             "main.py": "from utils import slugify, clamp\n"}
    [result] = import_checks(after, ["utils.py", *after])
    assert result.passed, result.output
    broken = {**after, "utils/__init__.py": "from .strings import slugify\n"}
    [result] = import_checks(broken, ["utils/__init__.py"])
    assert result.output == "main.py:1: utils has no name 'clamp'"


def test_tests_importing_a_changed_module_doctests_of_changed_functions_and_rerun_scripts() -> None:
    before = {**SHOP,
              "stats.py": 'def mean(xs):\n    """>>> mean([1, 3])\n    2.0\n    """\n    return sum(xs) / len(xs)\n',
              "test_stats.py": "from stats import mean\n\nassert mean([2, 4]) == 3\n",
              "tests/test_fn.py": "from shop import calc_total\n\n\ndef test_total():\n    assert calc_total([]) == 0\n",
              "report.py": "import stats\nprint(stats.mean([1]))\n"}
    after = {**before, "stats.py": before["stats.py"].replace("sum(xs)", "1.0 * sum(xs)")}
    checks = command_checks(before, after, ["stats.py"], ran=["python3 report.py", "ls -la", "python3 main.py"])
    assert [(c.kind, c.command) for c in checks] == [
        ("test", "python3 test_stats.py"),
        ("doctest", "python3 -m doctest stats.py"),
        ("script", "python3 report.py"),
    ]
    shop_checks = command_checks(before, before, ["shop.py"], ran=["python3 main.py", "python3 -m main"])
    assert [c.command for c in shop_checks] == [
        "python3 -m unittest test_shop", "python3 -m pytest -q tests/test_fn.py", "python3 main.py", "python3 -m main"]
    # An unchanged function keeps its doctest out; a change nothing imports has no check to run.
    added = {**before, "stats.py": before["stats.py"] + "\n\ndef median(xs):\n    return sorted(xs)[len(xs) // 2]\n"}
    assert [c.kind for c in command_checks(before, added, ["stats.py"])] == ["test"]
    assert command_checks(before, before, ["notes.txt"], ran=["python3 report.py"]) == []


@pytest.mark.parametrize("body", ["", "    pass\n", "    ...\n"])
def test_a_change_leaving_a_stub_as_it_was_is_checked_by_the_stubs_examples(tmp_path: Path, body: str) -> None:
    stub = f'def add(a, b):\n    """Sum.\n\n    >>> add(2, 3)\n    5\n    """\n{body}'
    before = {"calc.py": stub}
    after = {"calc.py": "import math\n\n\n" + stub}  # the file changed, the stub did not
    [check] = command_checks(before, after, ["calc.py"])
    assert (check.kind, check.command) == ("doctest", "python3 -m doctest calc.py")
    (tmp_path / "calc.py").write_text(after["calc.py"])
    assert subprocess.run(check.command or "", shell=True, cwd=tmp_path, capture_output=True).returncode != 0
    # Filled in, the unchanged examples check it too; a function with code that did not change stays out.
    done = {"calc.py": stub.replace(body, "") + "    return a + b\n"}
    assert [c.kind for c in command_checks(before, done, ["calc.py"])] == ["doctest"]
    assert command_checks(done, {"calc.py": "import math\n" + done["calc.py"]}, ["calc.py"]) == []


@pytest.mark.parametrize("broken", [False, True])
def test_the_found_commands_pass_on_a_good_change_and_fail_on_a_bad_one(tmp_path: Path, broken: bool) -> None:
    """Real python3 in a copy of the workspace: what the checks say is what running them says."""
    body = "return sum(items) + 1" if broken else "return sum(items)"
    after = {**SHOP, "shop.py": f"def calc_total(items):\n    {body}\n"}
    for path, text in after.items():
        (tmp_path / path).write_text(text)
    checks = command_checks(SHOP, after, ["shop.py"], ran=["python3 main.py"])
    codes = [subprocess.run(c.command or "", shell=True, cwd=tmp_path, capture_output=True).returncode for c in checks]
    assert [c.command for c in checks] == ["python3 -m unittest test_shop", "python3 main.py"]
    assert codes[0] == (1 if broken else 0) and codes[1] == 0  # main.py prints either way


def _result(passed: bool, exercises: bool = True) -> CheckResult:
    return CheckResult(Check("test", "t", "true", exercises), passed)


def test_ranking_checked_before_unchecked_then_all_passed_then_agreement_then_greedy() -> None:
    empty = Candidate(0, {})
    unchecked = Candidate(1, {"a.py": "x = 1\n"}, (_result(True, exercises=False),))
    failing = Candidate(2, {"a.py": "x = 2\n"}, (_result(True), _result(False)))
    passing = Candidate(3, {"a.py": "x = 3\n"}, (_result(True),))
    assert [c.index for c in rank([empty, unchecked, failing, passing])] == [3, 2, 1, 0]
    # Equal checks: the change two candidates agree on wins over the greedy one.
    greedy = Candidate(0, {"a.py": "g\n"}, (_result(True),))
    twins = [Candidate(i, {"a.py": "t\n"}, (_result(True),)) for i in (1, 2)]
    assert [c.index for c in rank([greedy, *twins])] == [1, 2, 0]
    # All equal: the greedy draft.
    assert choose([Candidate(2, {"a.py": "b\n"}), Candidate(0, {"a.py": "a\n"})]) == Candidate(0, {"a.py": "a\n"})
    assert choose([]) is None


def test_affected_scripts_are_the_scripts_changed_or_importing_changed_code() -> None:
    from codeloop.agent.small_model.checks import affected_scripts

    before = {
        "util.py": "def helper():\n    return 1\n",
        "main.py": "from util import helper\n\nprint(helper())\n",
        "cli.py": "import util\n\nif __name__ == '__main__':\n    util.helper()\n",
        "lib.py": "import util\n\ndef f():\n    return util.helper()\n",  # no top-level run: not a script
        "other.py": "print('alone')\n",  # a script that imports nothing changed
        "test_util.py": "from util import helper\n\nassert helper() == 1\n",  # tests are checked apart
    }
    assert affected_scripts(before, before, ["util.py"]) == ["cli.py", "main.py"]
    gone = {p: t for p, t in before.items() if p != "util.py"}
    assert affected_scripts(before, gone, ["util.py"]) == ["cli.py", "main.py"]  # a deleted module too
    assert affected_scripts(before, {**before, "other.py": "print(2)\n"}, ["other.py"]) == ["other.py"]
    # A script written by the candidate did not run before it: no baseline, no check.
    assert affected_scripts(before, {**before, "new.py": "print(1)\n"}, ["new.py"]) == []
    # A script the candidate deletes is checked too: it ran before, and then it cannot.
    assert affected_scripts(before, {p: t for p, t in before.items() if p != "main.py"}, ["main.py"]) == ["main.py"]


def test_a_test_file_the_change_deletes_is_still_run_so_that_it_fails() -> None:
    from codeloop.agent.small_model.checks import command_checks

    before = {"dates.py": "def is_leap(y):\n    return y % 4 == 0\n",
              "test_dates.py": "from dates import is_leap\n\nassert is_leap(2000)\n"}
    checks = command_checks(before, {}, ["dates.py", "test_dates.py"])
    assert [(c.kind, c.name, c.command) for c in checks] == [("test", "tests test_dates.py", "python3 test_dates.py")]
