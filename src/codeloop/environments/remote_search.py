"""Entry point run by ``python3`` on an SSH host to answer ``grep``/``glob``.

``SSHExecutionEnvironment`` uploads a zip of the search modules (this one, ``search``, ``atomic``,
``walk``, ``patterns``, ``safe_open``, ``runner``, ``base``, ``errors``) and runs
``python3 -c 'import sys; sys.path.insert(0, ZIP); ...main()' REQUEST_JSON``, so remote
results come from the very code that answers locally. Prints one JSON object:
``{"result": ...}`` or ``{"error": message, "kind": "pattern"|"missing"|"other"}``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from codeloop.environments import search
from codeloop.environments.base import GrepOptions
from codeloop.environments.errors import InvalidPatternError, WorkspaceError


async def _answer(request: dict[str, Any]) -> Any:
    rg = search.find_rg()
    where = (request["root"], request["start_rel"], request["pattern"])
    if request["op"] == "grep":
        return await search.grep(*where, GrepOptions(**request["options"]), rg)
    return await search.glob(*where, rg)


def main() -> None:
    """Answer the request in ``sys.argv[1]`` on stdout."""
    try:
        answer: dict[str, Any] = {"result": asyncio.run(_answer(json.loads(sys.argv[1])))}
    except InvalidPatternError as exc:
        answer = {"error": str(exc), "kind": "pattern"}
    except FileNotFoundError as exc:
        answer = {"error": str(exc), "kind": "missing"}
    except WorkspaceError as exc:
        answer = {"error": str(exc), "kind": "other"}
    sys.stdout.write(json.dumps(answer))


if __name__ == "__main__":
    main()
