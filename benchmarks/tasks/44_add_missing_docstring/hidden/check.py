"""shapes.py: rectangle_perimeter has a one-line docstring; the code and the other docstrings are
exactly as they were (compared as syntax trees, so formatting is free)."""

import ast
import sys
from pathlib import Path


def without(tree: ast.Module, name: str) -> str:
    """The tree's dump with the docstring of function `name` taken out."""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == name and ast.get_docstring(node) is not None:
            node.body = node.body[1:]
    return ast.dump(tree)


try:
    tree = ast.parse(Path("shapes.py").read_text())
except (OSError, SyntaxError):
    sys.exit(1)
orig = ast.parse((Path(__file__).resolve().parents[1] / "setup" / "shapes.py").read_text())
functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
if len(functions) != 7 or any(ast.get_docstring(f) is None for f in functions):
    sys.exit(1)
doc = next(ast.get_docstring(f) for f in functions if f.name == "rectangle_perimeter")
one_line = bool(doc.strip()) and "\n" not in doc.strip()
sys.exit(0 if one_line and without(tree, "rectangle_perimeter") == ast.dump(orig) else 1)
