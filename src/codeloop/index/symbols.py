"""Definitions of a parsed file, found with tree-sitter queries (one query per language).

Each pattern captures the definition node as ``@def.<kind>`` and its name as ``@name``.
Qualified names come from nesting: a definition inside another gets the outer names
as prefix (``Outer.Inner.method``); a Python/JS function directly inside a class is a
``method``; Rust ``impl`` blocks and Go receivers qualify their methods by type.
"""

from __future__ import annotations

from functools import cache

from tree_sitter import Node, Query, QueryCursor, Tree

from codeloop.index.languages import grammar
from codeloop.index.models import Symbol

_JS_COMMON = """
(class_declaration name: (_) @name) @def.class
(function_declaration name: (identifier) @name) @def.function
(generator_function_declaration name: (identifier) @name) @def.function
(method_definition name: (_) @name) @def.method
(variable_declarator name: (identifier) @name value: [(arrow_function) (function_expression)]) @def.function
"""

_TS_EXTRA = """
(abstract_class_declaration name: (type_identifier) @name) @def.class
(interface_declaration name: (type_identifier) @name) @def.interface
(type_alias_declaration name: (type_identifier) @name) @def.type
(enum_declaration name: (identifier) @name) @def.enum
(method_signature name: (_) @name) @def.method
(internal_module name: (_) @name) @def.namespace
"""

_C_COMMON = """
(function_definition declarator: (function_declarator declarator: (_) @name)) @def.function
(function_definition declarator: (pointer_declarator declarator: (function_declarator declarator: (_) @name))) @def.function
(struct_specifier name: (type_identifier) @name body: (_)) @def.struct
(union_specifier name: (type_identifier) @name body: (_)) @def.struct
(enum_specifier name: (type_identifier) @name body: (_)) @def.enum
(type_definition declarator: (type_identifier) @name) @def.type
(preproc_def name: (identifier) @name) @def.macro
(preproc_function_def name: (identifier) @name) @def.macro
"""

QUERIES: dict[str, str] = {
    "python": """
(class_definition name: (identifier) @name) @def.class
(function_definition name: (identifier) @name) @def.function
(module (expression_statement (assignment left: (identifier) @name) @def.variable))
""",
    "javascript": _JS_COMMON,
    "typescript": _JS_COMMON + _TS_EXTRA,
    "tsx": _JS_COMMON + _TS_EXTRA,
    "go": """
(function_declaration name: (identifier) @name) @def.function
(method_declaration name: (field_identifier) @name) @def.method
(type_spec name: (type_identifier) @name type: (struct_type)) @def.struct
(type_spec name: (type_identifier) @name type: (interface_type)) @def.interface
(type_spec name: (type_identifier) @name type: [(type_identifier) (qualified_type) (function_type)
  (map_type) (slice_type) (pointer_type) (array_type) (channel_type) (generic_type)]) @def.type
(source_file (const_declaration (const_spec name: (identifier) @name) @def.constant))
(source_file (var_declaration (var_spec name: (identifier) @name) @def.variable))
""",
    "rust": """
(function_item name: (identifier) @name) @def.function
(function_signature_item name: (identifier) @name) @def.method
(struct_item name: (type_identifier) @name) @def.struct
(enum_item name: (type_identifier) @name) @def.enum
(union_item name: (type_identifier) @name) @def.struct
(trait_item name: (type_identifier) @name) @def.trait
(impl_item type: (_) @name) @def.impl
(mod_item name: (identifier) @name) @def.module
(const_item name: (identifier) @name) @def.constant
(static_item name: (identifier) @name) @def.variable
(type_item name: (type_identifier) @name) @def.type
(macro_definition name: (identifier) @name) @def.macro
""",
    "java": """
(class_declaration name: (identifier) @name) @def.class
(interface_declaration name: (identifier) @name) @def.interface
(enum_declaration name: (identifier) @name) @def.enum
(record_declaration name: (identifier) @name) @def.class
(annotation_type_declaration name: (identifier) @name) @def.interface
(method_declaration name: (identifier) @name) @def.method
(constructor_declaration name: (identifier) @name) @def.method
(field_declaration declarator: (variable_declarator name: (identifier) @name)) @def.field
""",
    "c": _C_COMMON,
    "cpp": _C_COMMON + """
(function_definition declarator: (reference_declarator (function_declarator declarator: (_) @name))) @def.function
(class_specifier name: (type_identifier) @name body: (_)) @def.class
(namespace_definition name: (namespace_identifier) @name) @def.namespace
""",
    "bash": """
(function_definition name: (word) @name) @def.function
(program (variable_assignment name: (variable_name) @name) @def.variable)
""",
}

_CONTAINERS = frozenset({"class", "struct", "interface", "trait", "impl", "enum", "namespace", "module"})


@cache
def compile_query(language: str, source: str) -> Query | None:
    """``source`` compiled for ``language`` (symbols and imports); None without its grammar."""
    lang = grammar(language)
    return None if lang is None else Query(lang, source)


def node_text(node: Node) -> str:
    """A node's source text; bytes that are not UTF-8 are replaced, never an error."""
    return (node.text or b"").decode("utf-8", "replace")


def _type_name(node: Node) -> str:
    """The base identifier of a type node (``Foo`` for ``Foo<T>``, ``*Foo``, ``a::Foo``)."""
    text = node_text(node)
    for sep in ("<", "["):
        text = text.split(sep, 1)[0]
    return text.lstrip("*&").rsplit("::", 1)[-1].rsplit(".", 1)[-1].strip()


def _go_receiver(node: Node) -> str:
    receiver = node.child_by_field_name("receiver")
    if receiver is None:
        return ""
    for param in receiver.named_children:
        type_node = param.child_by_field_name("type")
        if type_node is not None:
            return _type_name(type_node)
    return ""


def extract_symbols(path: str, language: str, tree: Tree) -> list[Symbol]:
    """Definitions of ``tree`` (the file at ``path``) in source order, with qualified names
    from nesting and their stable ids."""
    query = compile_query(language, QUERIES[language]) if language in QUERIES else None
    if query is None:
        return []
    found: list[tuple[int, int, str, str, Node]] = []
    for _, captures in QueryCursor(query).matches(tree.root_node):
        name_nodes = captures.get("name")
        if not name_nodes:
            continue
        for key, nodes in captures.items():
            if key.startswith("def."):
                node, kind = nodes[0], key[4:]
                name = _type_name(name_nodes[0]) if kind == "impl" else node_text(name_nodes[0])
                found.append((node.start_byte, -node.end_byte, kind, name, node))
    found.sort(key=lambda item: (item[0], item[1]))
    result: list[Symbol] = []
    ids: dict[str, int] = {}  # how often each id was given, for the ``#N`` of duplicates
    stack: list[tuple[int, str, str]] = []  # (end_byte, qualified name, kind) of open containers
    seen: set[tuple[int, int, str]] = set()
    for start, neg_end, kind, name, node in found:
        if (start, neg_end, name) in seen:
            continue
        seen.add((start, neg_end, name))
        while stack and stack[-1][0] <= start:
            stack.pop()
        parent = stack[-1] if stack else None
        if kind == "function" and parent is not None and parent[2] in {"class", "impl", "trait", "struct"}:
            kind = "method"
        prefix = parent[1] if parent else ""
        if language == "go" and kind == "method":
            prefix = _go_receiver(node)
        qualified = f"{prefix}.{name}" if prefix else name
        base = f"{path}::{qualified}"
        ids[base] = count = ids.get(base, 0) + 1
        result.append(Symbol(base if count == 1 else f"{base}#{count}", path, language, kind, name, qualified,
                             node.start_point.row + 1, node.start_point.column, node.end_point.row + 1,
                             node.end_point.column))
        if kind in _CONTAINERS or kind in {"function", "method"}:
            stack.append((-neg_end, qualified, kind))
    return result
