"""The checks a candidate change is judged by (issue 33), found in the workspace, never in the
task's wording: from the changed files, the project's imports and the commands this session ran.

Two kinds, kept apart because they need different things:

- **read here** (no code runs, so they need no sandbox and no approval): the changed files
  parse (Python, JSON, TOML); the names imported across the project from or into changed
  modules still resolve;
- **run** (commands for the pipeline's ``exec`` in the candidate's scratch environment):
  the tests that import a changed module (``python3 -m unittest``, ``python3 -m pytest`` or
  the test script itself, by how the file is written); the docstring examples of changed
  functions, and of stubs (a docstring and no code yet) left as they were in a changed file
  (``python3 -m doctest``); the commands this session ran successfully that run a
  changed file or import one; the project's scripts that ran cleanly before the change and
  are changed or import changed code (:func:`affected_scripts`: a script that ran before and
  fails after was broken by the change).

A check *exercises* the change when it reads or runs changed code; only those count when
candidates are ranked (:mod:`.choose`), so an empty change, which no check exercises, never
wins. Paths are workspace-relative with ``/``; a module is its path from the workspace root or
from ``src/``.
"""

from __future__ import annotations

import ast
import json
import shlex
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

CheckKind = Literal["parse", "imports", "test", "doctest", "script", "runs"]
SOURCE_ROOTS = ("", "src/")
"""Where top-level modules live: the workspace root, or ``src/`` (the src layout)."""


@dataclass(frozen=True, slots=True)
class Check:
    """One check of a candidate."""

    kind: CheckKind
    name: str
    """What the terminal shows, e.g. ``tests test_stats.py``."""
    command: str | None
    """The shell command run in the scratch environment; None for the checks read here."""
    exercises: bool
    """It reads or runs changed code (only such checks rank a candidate)."""


@dataclass(frozen=True, slots=True)
class CheckResult:
    """What one check said about one candidate."""

    check: Check
    passed: bool
    output: str = ""
    """Why it failed (what the repair round shows the model); empty when it passed."""


def module_of(path: str) -> str | None:
    """The module a ``.py`` path is (``pkg/mod.py`` → ``pkg.mod``, ``pkg/__init__.py`` → ``pkg``,
    ``src/pkg/a.py`` → ``pkg.a``), or None for other files."""
    if not path.endswith(".py"):
        return None
    for root in reversed(SOURCE_ROOTS):
        if root and path.startswith(root):
            path = path[len(root):]
            break
    parts = path[:-3].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    if not parts or not all(part.isidentifier() for part in parts):
        return None
    return ".".join(parts)


def _tree(text: str, path: str) -> ast.Module | None:
    try:
        return ast.parse(text, filename=path)
    except (SyntaxError, ValueError):
        return None


# -- read here --------------------------------------------------------------------------------


def parse_checks(changed: Mapping[str, str | None]) -> list[CheckResult]:
    """Each changed Python, JSON or TOML file parses (a deleted one is not checked)."""
    results = []
    for path, text in changed.items():
        if text is None:
            continue
        problem: str | None
        if path.endswith(".py"):
            try:
                ast.parse(text, filename=path)
                problem = None
            except SyntaxError as exc:
                problem = f"{path}:{exc.lineno}: {exc.msg}"
            except ValueError as exc:  # a NUL byte
                problem = f"{path}: {exc}"
        elif path.endswith(".json"):
            try:
                json.loads(text)
                problem = None
            except ValueError as exc:
                problem = f"{path}: {exc}"
        elif path.endswith(".toml"):
            try:
                tomllib.loads(text)
                problem = None
            except tomllib.TOMLDecodeError as exc:
                problem = f"{path}: {exc}"
        else:
            continue
        check = Check("parse", f"parse {path}", None, True)
        results.append(CheckResult(check, problem is None, problem or ""))
    return results


@dataclass(frozen=True, slots=True)
class _Module:
    path: str
    tree: ast.Module | None


def project_modules(files: Mapping[str, str]) -> dict[str, _Module]:
    """The Python modules among ``files`` (path → text) by module name."""
    modules = {}
    for path, text in files.items():
        name = module_of(path)
        if name is not None:
            modules[name] = _Module(path, _tree(text, path))
    return modules


def _imports(tree: ast.Module, name: str, is_package: bool) -> Iterable[tuple[str, tuple[str, ...], int]]:
    """(module, names taken from it, line) for each import in ``tree``; relative imports made
    absolute from ``name``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, (), node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = name.split(".") if is_package else name.split(".")[:-1]
                anchor = package[: len(package) - (node.level - 1)] if node.level > 1 else package
                base = ".".join([*anchor, *([base] if base else [])])
            yield base, tuple(a.name for a in node.names), node.lineno


def _defines(tree: ast.Module | None) -> set[str] | None:
    """The names a module defines at top level; None when anything may be (``*``, ``__getattr__``,
    or it does not parse: the parse check speaks for that)."""
    if tree is None:
        return None
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.Import | ast.ImportFrom):
            if any(alias.name == "*" for alias in node.names):
                return None
            names |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        elif isinstance(node, ast.If | ast.Try | ast.With | ast.For | ast.While):
            return None  # conditional definitions: not worth guessing
    return None if "__getattr__" in names else names


def import_checks(after: Mapping[str, str], changed: Iterable[str]) -> list[CheckResult]:
    """One check: every import of a project module, in a changed file or of a changed (or
    deleted) module, still finds its module and names in ``after`` (path → text of every
    project file after the candidate; deleted files absent). No check when no such import."""
    modules = project_modules(after)
    changed_names = {module_of(p) for p in changed} - {None}
    tops = {name.split(".")[0] for name in modules} | {n.split(".")[0] for n in changed_names if n}
    broken, seen = [], 0
    for name, module in sorted(modules.items()):
        if module.tree is None:
            continue
        is_package = module.path.endswith("__init__.py")
        for target, names, line in _imports(module.tree, name, is_package):
            if not target or target.split(".")[0] not in tops:
                continue  # the standard library or an installed package
            related = module.path in changed or target in changed_names or any(
                f"{target}.{n}" in changed_names for n in names)
            if not related:
                continue
            seen += 1
            where = f"{module.path}:{line}"
            if target not in modules:
                broken.append(f"{where}: no module named {target!r} in the project")
                continue
            defined = _defines(modules[target].tree)
            for taken in names:
                if defined is not None and taken != "*" and taken not in defined and f"{target}.{taken}" not in modules:
                    broken.append(f"{where}: {target} has no name {taken!r}")
    if not seen:
        return []
    check = Check("imports", "project imports resolve", None, True)
    return [CheckResult(check, not broken, "\n".join(broken))]


# -- run in the scratch environment -----------------------------------------------------------


def import_closure(after: Mapping[str, str]) -> dict[str, set[str]]:
    """For each project module, the project modules it imports, directly or not (itself included)."""
    modules = project_modules(after)
    direct: dict[str, set[str]] = {}
    for name, module in modules.items():
        targets: set[str] = set()
        if module.tree is not None:
            for target, names, _line in _imports(module.tree, name, module.path.endswith("__init__.py")):
                parts = target.split(".")
                # `import a.b` runs a and a.b; `from a import b` may run the submodule a.b.
                targets |= {".".join(parts[:i]) for i in range(1, len(parts) + 1)}
                targets |= {f"{target}.{n}" for n in names}
        direct[name] = {t for t in targets if t in modules}
    closure = {}
    for name in modules:
        seen, todo = {name}, [name]
        while todo:
            for nxt in direct.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        closure[name] = seen
    return closure


def _is_test_file(path: str) -> bool:
    base = path.rsplit("/", 1)[-1]
    return base.endswith(".py") and (base.startswith("test_") or base.endswith("_test.py"))


def _test_command(path: str, tree: ast.Module) -> str:
    """How a test file is run, by how it is written: a unittest module, pytest functions, or
    a script of asserts."""
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {(n.module or "").split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    has_main = any(isinstance(n, ast.If) and "__main__" in ast.unparse(n.test) for n in tree.body)
    functions = any(isinstance(n, ast.FunctionDef) and n.name.startswith("test") for n in tree.body)
    module = module_of(path)
    if "unittest" in imported and module is not None and "/" not in path:
        return f"python3 -m unittest {module}"
    if functions and not has_main:
        return f"python3 -m pytest -q {shlex.quote(path)}"
    return f"python3 {shlex.quote(path)}"


def _is_stub(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A function whose body is its docstring and at most ``pass`` or ``...``: written to be filled in."""
    rest = node.body[1:] if ast.get_docstring(node) is not None else node.body
    return all(isinstance(n, ast.Pass) or (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)
                                           and n.value.value is Ellipsis) for n in rest)


def _changed_functions_with_examples(before: str | None, after: str, path: str) -> list[str]:
    """Functions of ``after`` whose docstring has examples and whose source differs from
    ``before``, or that are still stubs: a change to their file that leaves a stub as it was
    is checked by the stub's own examples (the 1.5B model wrote HumanEval/49's prompt back with
    only an import added, and its parse check passed)."""
    tree = _tree(after, path)
    if tree is None:
        return []
    old_tree = _tree(before, path) if before is not None else None
    old = {}
    if old_tree is not None:
        old = {n.name: ast.dump(n) for n in ast.walk(old_tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node) or ""
            if ">>>" in doc and (old.get(node.name) != ast.dump(node) or _is_stub(node)):
                names.append(node.name)
    return names


def _is_script(tree: ast.Module) -> bool:
    """A module written to be run: a ``__main__`` guard or a call at its top level."""
    for node in tree.body:
        if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test):
            return True
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            return True
    return False


def script_check(path: str) -> Check:
    """Running the project's script ``path`` (see :func:`affected_scripts`)."""
    return Check("runs", f"still runs: {path}", f"python3 {shlex.quote(path)}", True)


def affected_scripts(before: Mapping[str, str], after: Mapping[str, str], changed: Iterable[str]) -> list[str]:
    """The scripts (not tests) of the project before a change that the change alters, deletes or
    whose imports it changes or deletes: run before and after the change, each is a check when
    it ran cleanly before (the caller runs that baseline). A script the change deletes fails its
    check: it ran, and it no longer does."""
    changed = set(changed)
    changed_modules = {m for m in map(module_of, changed) if m is not None}
    closure = import_closure({**before, **after})
    found = []
    for path in sorted(before):
        if _is_test_file(path) or path.endswith("__init__.py"):
            continue
        tree, module = _tree(after.get(path, before[path]), path), module_of(path)
        if tree is None or module is None or not _is_script(tree):
            continue
        if path in changed or closure.get(module, set()) & changed_modules:
            found.append(path)
    return found


def command_checks(before: Mapping[str, str], after: Mapping[str, str], changed: Iterable[str],
                   ran: Sequence[str] = ()) -> list[Check]:
    """The checks to run for a candidate that turns ``before`` into ``after`` (path → text of
    the project's files; a deleted file is absent from ``after``): tests importing a changed
    module, doctests of changed functions, and the commands of ``ran`` (this session's
    successful commands) that run or import a changed file, in that order."""
    changed = sorted(set(changed))
    changed_modules = {m for m in map(module_of, changed) if m is not None}
    closure = import_closure(after)
    checks: list[Check] = []
    for path in sorted(after):
        if not _is_test_file(path):
            continue
        tree = _tree(after[path], path)
        module = module_of(path)
        if tree is None or module is None:
            continue
        if path in changed or closure.get(module, set()) & changed_modules:
            checks.append(Check("test", f"tests {path}", _test_command(path, tree), True))
    for path in changed:
        # A test file the change deletes is still run: it fails, as the project's own check
        # that no longer exists (the 1.5B model deleted the module and the test it was to fix).
        if path not in after and path in before and _is_test_file(path) and (tree := _tree(before[path], path)):
            checks.append(Check("test", f"tests {path}", _test_command(path, tree), True))
    for path in changed:
        if path in after and path.endswith(".py") and _changed_functions_with_examples(before.get(path), after[path], path):
            checks.append(Check("doctest", f"doctest {path}", f"python3 -m doctest {shlex.quote(path)}", True))
    for command in dict.fromkeys(ran):
        if _runs_changed_code(command, changed, changed_modules, closure):
            checks.append(Check("script", f"again: {command}", command, True))
    return checks


def _runs_changed_code(command: str, changed: Sequence[str], changed_modules: set[str],
                       closure: Mapping[str, set[str]]) -> bool:
    """Whether ``command`` names a changed file, or a Python file or module importing one."""
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    for i, word in enumerate(words):
        word = word.removeprefix("./")
        module = module_of(word) if word.endswith(".py") else (word if i and words[i - 1] == "-m" else None)
        if word in changed or (module is not None and closure.get(module, set()) & changed_modules):
            return True
    return False
