"""Test the harness itself: run it against an older policy and count the examples it needs to
rediscover each public class of issue 31 (figures in docs/security.md).

    .venv/bin/python tests/security/rediscover.py [COMMIT] [--max N]

COMMIT (default 51cb17f, the policy the issue was filed against) is read with ``git show`` into
a throw-away package; for each class the grammar is made to hold that class's production and
hypothesis draws lines (derandomized, no shrinking) until one the old policy allowed does
something it did not report. ``--current`` runs the same against today's policy.
"""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType

from hypothesis import HealthCheck, Phase, given, settings

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from codeloop.policy import preset  # noqa: E402
from codeloop.policy.paths import matches  # noqa: E402
from security.bash_grammar import CLASSES, Line, lines  # noqa: E402
from security.bash_harness import disagreements, make_template, run_traced  # noqa: E402
from security.policy_view import seen_by_current, seen_by_module  # noqa: E402

_FILES = ("__init__.py", "model.py", "paths.py", "wrappers.py", "shell_parse.py", "shell.py", "presets.py")


def load_policy_at(commit: str, into: Path) -> tuple[ModuleType, ModuleType, ModuleType]:
    """``shell``, ``shell_parse`` and ``presets`` of ``commit``'s policy, as package ``oldpolicy``."""
    pkg = into / "oldpolicy"
    pkg.mkdir()
    repo = HERE.parents[1]
    for name in _FILES:
        text = "" if name == "__init__.py" else subprocess.run(
            ["git", "show", f"{commit}:src/codeloop/policy/{name}"], cwd=repo, capture_output=True, text=True,
            check=True).stdout
        (pkg / name).write_text(text.replace("codeloop.policy.", "oldpolicy."))
    sys.path.insert(0, str(into))
    return (importlib.import_module("oldpolicy.shell"), importlib.import_module("oldpolicy.shell_parse"),
            importlib.import_module("oldpolicy.presets"))


class _Found(Exception):
    pass


def examples_to_find(cls: str, seen_of: object, template: Path, scratch: Path, limit: int) -> tuple[int, str]:
    """How many generated lines holding ``cls`` it took to find a disagreement (0: none in ``limit``)."""
    count = [0]
    protected = preset("standard").shell.protected_paths

    @settings(max_examples=limit, derandomize=True, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(line=lines(require=cls))
    def run(line: Line) -> None:
        count[0] += 1
        seen = seen_of(line.text)  # type: ignore[operator]
        if not seen.allowed:
            return
        problems = disagreements(seen, run_traced(line.text, template, scratch), protected, matches)
        if cls == "destructive-git":
            problems = [p for p in problems if p.endswith(" was lost")]
        if problems and line.tags <= {cls}:  # only a line holding no other class counts for this one
            raise _Found(f"{line.text!r}: {problems[0]}")

    try:
        run()
    except _Found as found:
        return count[0], str(found)
    return 0, ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("commit", nargs="?", default="51cb17f")
    parser.add_argument("--max", type=int, default=300)
    parser.add_argument("--current", action="store_true", help="run against today's policy instead")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as root:
        rootp = Path(root)
        template = make_template(rootp)
        scratch = rootp / "scratch"
        scratch.mkdir()
        if args.current:
            standard = preset("standard")

            def seen_of(text: str) -> object:
                return seen_by_current(text, standard)
            label = "today's policy"
        else:
            shell, parse, presets = load_policy_at(args.commit, rootp)
            old = presets.preset("standard")

            def seen_of(text: str) -> object:
                return seen_by_module(text, old, shell, parse)
            label = f"the policy at {args.commit}"
        print(f"rediscovering issue 31's classes against {label} (at most {args.max} examples each)")
        for cls in CLASSES:
            n, example = examples_to_find(cls, seen_of, template, scratch, args.max)
            print(f"{cls:28} " + (f"found after {n} examples: {example[:160]}" if n else f"not found in {args.max}"))


if __name__ == "__main__":
    main()
