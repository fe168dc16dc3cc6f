"""Import statements of a parsed file (Python, JavaScript/TypeScript, Go, Rust).

Only extraction lives here; turning a specifier into repository files needs the whole
file list and is done by :mod:`codeloop.index.import_resolution` after every build.
"""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node, QueryCursor, Tree

from codeloop.index.symbols import compile_query, node_text


@dataclass(frozen=True)
class RawImport:
    """One import as written in a file."""

    line: int
    """1-based line."""
    specifier: str
    """Module as written; Python relative imports keep their dots (``..pkg.mod``); Rust
    ``mod foo;`` declarations are ``mod:foo``; empty when a dynamic import's argument is
    not a literal."""
    dynamic: bool
    """True for run-time imports (``importlib.import_module``, ``__import__``, ``import()``,
    ``require`` of a non-literal)."""
    names: tuple[str, ...] = ()
    """Python ``from X import a, b``: the imported names (each may be a submodule)."""


_JS = """
(import_statement source: (string) @static)
(export_statement source: (string) @static)
(call_expression function: (identifier) @fn arguments: (arguments . (_) @arg) (#eq? @fn "require"))
(call_expression function: (import) arguments: (arguments . (_) @dyn))
"""

_QUERIES = {
    "python": """
(import_statement) @import
(import_from_statement) @from
(call function: (identifier) @fn arguments: (argument_list . (_) @arg) (#eq? @fn "__import__"))
(call function: (attribute attribute: (identifier) @fn) arguments: (argument_list . (_) @arg)
  (#eq? @fn "import_module"))
""",
    "javascript": _JS,
    "typescript": _JS,
    "tsx": _JS,
    "go": "(import_spec path: (_) @static)",
    "rust": """
(use_declaration argument: (_) @use)
(mod_item name: (identifier) @mod) @moditem
""",
}

_PY_DYNAMIC = frozenset({"__import__", "import_module"})


def _string_literal(node: Node) -> str | None:
    """The value of a plain string literal node, ``None`` for anything computed."""
    if node.type not in {"string", "interpreted_string_literal", "raw_string_literal"}:
        return None
    if any(child.type in {"interpolation", "template_substitution"} for child in node.named_children):
        return None
    text = node_text(node)
    while text[:1] in {"r", "b", "u", "f", "R", "B", "U", "F"}:
        text = text[1:]
    for quote in ('"""', "'''", '"', "'", "`"):
        if text.startswith(quote) and text.endswith(quote) and len(text) >= 2 * len(quote):
            return text[len(quote):-len(quote)]
    return None


def _imported_names(node: Node) -> list[str]:
    """The names an ``import``/``from ... import`` statement binds, aliases dropped."""
    names = []
    for child in node.children_by_field_name("name"):
        target = child.child_by_field_name("name") if child.type == "aliased_import" else child
        if target is not None:
            names.append(node_text(target))
    return names


def extract_imports(language: str, tree: Tree) -> list[RawImport]:
    """Imports of ``tree`` in source order (duplicates on one line collapsed)."""
    query = compile_query(language, _QUERIES[language]) if language in _QUERIES else None
    if query is None:
        return []
    found: list[RawImport] = []
    for _, caps in QueryCursor(query).matches(tree.root_node):
        if "import" in caps:
            node = caps["import"][0]
            found.extend(RawImport(node.start_point.row + 1, name, False) for name in _imported_names(node))
        elif "from" in caps:
            node = caps["from"][0]
            module = node.child_by_field_name("module_name")
            spec = node_text(module) if module is not None else ""
            found.append(RawImport(node.start_point.row + 1, spec, False, tuple(_imported_names(node))))
        elif "fn" in caps:
            fn, arg = node_text(caps["fn"][0]), caps["arg"][0]
            if language == "python" and fn in _PY_DYNAMIC:
                found.append(RawImport(arg.start_point.row + 1, _string_literal(arg) or "", True))
            elif language != "python" and fn == "require":
                value = _string_literal(arg)
                found.append(RawImport(arg.start_point.row + 1, value or "", value is None))
        elif "dyn" in caps:
            arg = caps["dyn"][0]
            found.append(RawImport(arg.start_point.row + 1, _string_literal(arg) or "", True))
        elif "static" in caps:
            node = caps["static"][0]
            value = _string_literal(node)
            if value is not None:
                found.append(RawImport(node.start_point.row + 1, value, False))
        elif "use" in caps:
            node = caps["use"][0]
            found.append(RawImport(node.start_point.row + 1, node_text(node), False))
        elif "mod" in caps and caps["moditem"][0].child_by_field_name("body") is None:
            node = caps["mod"][0]
            found.append(RawImport(node.start_point.row + 1, f"mod:{node_text(node)}", False))
    unique: dict[tuple[int, str, bool], RawImport] = {}
    for item in found:
        unique.setdefault((item.line, item.specifier, item.dynamic), item)
    return list(unique.values())
