"""Turning import specifiers into repository files (the impact graph's edges).

Rules per language (what a user of each toolchain expects, without running it):

- Python: relative imports from the importing file's package; absolute imports from the
  repository root, ``src/``, ``lib/`` and every ancestor directory of the importing file;
  ``from pkg import name`` also tries the submodule ``pkg/name.py``. An absolute import
  whose top-level package is not in the repository is ``external``.
- JavaScript/TypeScript: relative specifiers with the usual extensions and ``index``
  files (``./x.js`` also finds ``x.ts``, as TypeScript's ESM convention); bare specifiers
  (``react``) are ``external``.
- Go: import paths under a ``module`` of a ``go.mod`` in the repository resolve to the
  package directory's non-test ``.go`` files; others are ``external``.
- Rust: ``mod x;`` finds ``x.rs``/``x/mod.rs``; ``use crate::/self::/super::`` paths map to
  module files of the crate whose ``Cargo.toml`` is nearest; other crates are ``external``.
"""

from __future__ import annotations

import posixpath
import re
from collections import defaultdict
from collections.abc import Iterable
from functools import partial

from codeloop.index.imports import RawImport
from codeloop.index.models import ImportStatus

_JS_EXTS = (".ts", ".tsx", ".d.ts", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts", ".json")
_GO_MODULE = re.compile(r"^\s*module\s+(\S+)", re.MULTILINE)


class ImportResolver:
    """Resolves imports against one snapshot of the repository's file list."""

    def __init__(self, files: set[str], go_mod_texts: dict[str, str]) -> None:
        """``files``: every indexed path; ``go_mod_texts``: path of each ``go.mod`` → its text."""
        self._files = files
        self._dirs: set[str] = set()
        self._go_files: dict[str, list[str]] = defaultdict(list)
        for path in files:
            parent = posixpath.dirname(path)
            if path.endswith(".go") and not path.endswith("_test.go"):
                self._go_files[parent].append(path)
            while parent and parent not in self._dirs:
                self._dirs.add(parent)
                parent = posixpath.dirname(parent)
        self._go_modules: list[tuple[str, str]] = []
        for mod_path, text in go_mod_texts.items():
            match = _GO_MODULE.search(text)
            if match:
                self._go_modules.append((match.group(1), posixpath.dirname(mod_path)))
        self._go_modules.sort(key=lambda item: -len(item[0]))

    def resolve(self, source: str, language: str, item: RawImport) -> tuple[ImportStatus, tuple[str, ...]]:
        """The status and target files of one import of ``source``."""
        if not item.specifier:
            return "dynamic", ()
        if language == "python":
            status, targets = self._python(source, item)
        elif language in {"javascript", "typescript", "tsx"}:
            status, targets = self._javascript(source, item.specifier)
        elif language == "go":
            status, targets = self._go(item.specifier)
        elif language == "rust":
            status, targets = self._rust(source, item.specifier)
        else:
            return "external", ()
        # A dynamic import keeps its status so diagnostics list it, and its edges when the
        # argument was a literal that resolved.
        return ("dynamic" if item.dynamic else status), tuple(sorted(set(targets)))

    # Python ---------------------------------------------------------------------------

    def _first(self, candidates: Iterable[str]) -> str | None:
        """The first of ``candidates`` that is a repository file."""
        return next((c for c in candidates if c in self._files), None)

    def _py_module(self, base: str, dotted: str) -> str | None:
        stem = posixpath.join(base, dotted.replace(".", "/"))
        return self._first((f"{stem}.py", f"{stem}/__init__.py", f"{stem}.pyi", f"{stem}/__init__.pyi"))

    def _python(self, source: str, item: RawImport) -> tuple[ImportStatus, list[str]]:
        spec = item.specifier
        if spec.startswith("."):
            dots = len(spec) - len(spec.lstrip("."))
            base = posixpath.dirname(source)
            for _ in range(dots - 1):
                base = posixpath.dirname(base)
            bases = [base]
            module = spec[dots:]
        else:
            bases = ["", "src", "lib"]
            parent = posixpath.dirname(source)
            while parent:
                bases.append(parent)
                parent = posixpath.dirname(parent)
            module = spec
        for base in bases:
            names = (f"{module}.{name}" if module else name for name in item.names)
            targets = [sub for sub in map(partial(self._py_module, base), names) if sub]
            init = [posixpath.join(base, "__init__.py")]
            main = self._py_module(base, module) if module else self._first(init)
            if main:
                targets.append(main)
            if targets:
                return "resolved", targets
        if spec.startswith("."):
            return "unresolved", []
        top = module.split(".", 1)[0]
        stems = (posixpath.join(base, top) for base in ("", "src", "lib"))
        if self._first(stem + end for stem in stems for end in ("/__init__.py", ".py")):
            return "unresolved", []
        return "external", []

    # JavaScript / TypeScript ----------------------------------------------------------

    def _javascript(self, source: str, spec: str) -> tuple[ImportStatus, list[str]]:
        if not spec.startswith((".", "/")):
            return "external", []
        base = posixpath.normpath(posixpath.join(posixpath.dirname(source), spec)).lstrip("/")
        candidates = [base]
        stem, ext = posixpath.splitext(base)
        if ext in {".js", ".jsx", ".mjs", ".cjs"}:
            candidates += [stem + e for e in (".ts", ".tsx", ".mts", ".cts")]
        candidates += [base + e for e in _JS_EXTS] + [f"{base}/index{e}" for e in _JS_EXTS]
        found = self._first(candidates)
        return ("resolved", [found]) if found else ("unresolved", [])

    # Go ---------------------------------------------------------------------------------

    def _go(self, spec: str) -> tuple[ImportStatus, list[str]]:
        for module, directory in self._go_modules:
            if spec == module or spec.startswith(module + "/"):
                rest = spec[len(module):].lstrip("/")
                pkg_dir = posixpath.join(directory, rest) if directory else rest
                files = self._go_files.get(pkg_dir.rstrip("/"), [])
                return ("resolved", list(files)) if files else ("unresolved", [])
        return "external", []

    # Rust -------------------------------------------------------------------------------

    def _crate_src(self, source: str) -> str:
        parent = posixpath.dirname(source)
        while True:
            if posixpath.join(parent, "Cargo.toml") in self._files:
                return posixpath.join(parent, "src")
            if not parent:
                return posixpath.dirname(source)
            parent = posixpath.dirname(parent)

    def _module_dir(self, source: str) -> str:
        """Directory holding the submodules of the module defined by ``source``."""
        name = posixpath.basename(source)
        if name in {"mod.rs", "lib.rs", "main.rs"}:
            return posixpath.dirname(source)
        return source[: -len(".rs")]

    def _module_file(self, directory: str) -> str | None:
        names = (".rs", "/mod.rs", "/lib.rs", "/main.rs")
        return self._first((directory + name).lstrip("/") for name in names)

    def _rust_path(self, directory: str, segments: list[str]) -> str | None:
        for k in range(len(segments), 0, -1):
            stem = posixpath.join(directory, *segments[:k])
            found = self._first((f"{stem}.rs", f"{stem}/mod.rs"))
            if found:
                return found
        return self._module_file(directory)

    def _rust(self, source: str, spec: str) -> tuple[ImportStatus, list[str]]:
        if spec.startswith("mod:"):
            directory, name = self._module_dir(source), spec[4:]
            found = self._first((f"{directory}/{name}.rs", f"{directory}/{name}/mod.rs"))
            return ("resolved", [found]) if found else ("unresolved", [])
        targets: list[str] = []
        for path in _expand_use(spec):
            segments = [s for s in path.split("::") if s]
            if not segments:
                continue
            head = segments[0]
            if head == "crate":
                directory, rest = self._crate_src(source), segments[1:]
            elif head in {"self", "super"}:
                directory = self._module_dir(source)
                rest = segments
                while rest and rest[0] in {"self", "super"}:
                    if rest[0] == "super":
                        directory = posixpath.dirname(directory)
                    rest = rest[1:]
            else:
                continue
            found = self._rust_path(directory, rest) if rest else self._module_file(directory)
            if found is None:
                return "unresolved", []
            if found != source:
                targets.append(found)
        if not targets:
            head = spec.lstrip(":").split("::", 1)[0]
            return ("resolved", []) if head in {"crate", "self", "super"} else ("external", [])
        return "resolved", targets


def _expand_use(spec: str) -> list[str]:
    """``a::{b, c::d}`` → ``["a::b", "a::c::d"]`` (one level of braces; aliases dropped)."""
    spec = re.sub(r"\s+", "", re.sub(r"\s+as\s+\w+", "", spec)).lstrip(":")
    if "{" not in spec:
        return [spec]
    prefix, _, rest = spec.partition("{")
    inner = rest.rsplit("}", 1)[0]
    items, depth, current = [], 0, ""
    for char in inner:
        if char == "," and depth == 0:
            items.append(current)
            current = ""
            continue
        depth += char == "{"
        depth -= char == "}"
        current += char
    items.append(current)
    return [prefix + item.split("{", 1)[0] for item in items if item and item != "self"] or [prefix]
