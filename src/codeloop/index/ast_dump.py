"""A compact, bounded view of a file's syntax tree (``docdex.ast``, ``codeloop index ast``)."""

from __future__ import annotations

from typing import Any

from tree_sitter import Node

from codeloop.index.languages import language_for, parse, parser


def _node(node: Node, depth: int, max_depth: int, budget: list[int]) -> dict[str, Any]:
    budget[0] -= 1
    out: dict[str, Any] = {
        "type": node.type,
        "start": [node.start_point.row + 1, node.start_point.column],
        "end": [node.end_point.row + 1, node.end_point.column],
    }
    if node.named_child_count == 0:
        out["text"] = (node.text or b"").decode("utf-8", "replace")[:80]
        return out
    if depth >= max_depth or budget[0] <= 0:
        out["children_omitted"] = node.named_child_count
        return out
    children: list[dict[str, Any]] = []
    for child in node.named_children:
        if budget[0] <= 0:
            out["children_omitted"] = node.named_child_count - len(children)
            break
        children.append(_node(child, depth + 1, max_depth, budget))
    out["children"] = children
    return out


def syntax_tree(path: str, data: bytes, max_depth: int = 6, max_nodes: int = 2000) -> dict[str, Any]:
    """Named nodes of ``data`` parsed as ``path``'s language, down to ``max_depth`` levels
    and at most ``max_nodes`` nodes; cut subtrees say how many children were omitted.

    Raises ``ValueError`` when the file's language has no grammar.
    """
    language = language_for(path)
    ts_parser = parser(language) if language else None
    if language is None or ts_parser is None:
        raise ValueError(f"no syntax tree for {path}: its language is not one of the indexed grammars")
    tree = parse(ts_parser, language, data)
    budget = [max_nodes]
    root = _node(tree.root_node, 0, max_depth, budget)
    return {"path": path, "language": language, "has_errors": tree.root_node.has_error,
            "truncated": budget[0] <= 0, "root": root}
