"""Project instruction files (loop spec §6.5).

Walks from the workspace root down to the session's working directory, loading at each
level the files of the active profile: ``AGENTS.md`` always, ``CLAUDE.md`` for
``anthropic``, ``GEMINI.md`` for ``gemini``, ``.codex/instructions.md`` for ``openai``.
Root files come first, deeper ones after (deeper = higher precedence). The total is
capped at 32 KB with the marker ``[Project instructions truncated at 32KB]``.

Files are read through the ``ExecutionEnvironment``, so a git root *above* the workspace
is not read: the workspace root is the top of the walk (the runtime never reads outside
the workspace).
"""

from __future__ import annotations

from dataclasses import dataclass

from codeloop.environments.base import ExecutionEnvironment
from codeloop.environments.errors import WorkspaceError

PROJECT_DOCS_BUDGET = 32 * 1024
"""Bytes of project instructions included at most (§6.5)."""
TRUNCATION_MARKER = "[Project instructions truncated at 32KB]"
"""Appended when the budget cut the instructions (§6.5, verbatim)."""

PROFILE_DOC_FILES: dict[str, tuple[str, ...]] = {
    "openai": ("AGENTS.md", ".codex/instructions.md"),
    "anthropic": ("AGENTS.md", "CLAUDE.md"),
    "gemini": ("AGENTS.md", "GEMINI.md"),
    "text": ("AGENTS.md",),
}
"""Instruction files each profile loads; unknown profiles load ``AGENTS.md`` only."""


@dataclass(frozen=True)
class ProjectDoc:
    """One loaded instruction file."""

    path: str
    """Workspace-relative path."""
    content: str
    """File text (possibly cut by the budget)."""


def _levels(subdir: str) -> list[str]:
    parts = [p for p in subdir.replace("\\", "/").split("/") if p and p != "."]
    return ["/".join(parts[:i]) for i in range(len(parts) + 1)]


async def discover_project_docs(
    env: ExecutionEnvironment, profile_id: str, subdir: str = ""
) -> list[ProjectDoc]:
    """Instruction files from the workspace root to ``subdir``, root first, within budget."""
    names = PROFILE_DOC_FILES.get(profile_id, ("AGENTS.md",))
    docs: list[ProjectDoc] = []
    used = 0
    for level in _levels(subdir):
        for name in names:
            path = f"{level}/{name}" if level else name
            try:
                if not await env.file_exists(path):
                    continue
                data = await env.read_bytes(path)
            except WorkspaceError:
                continue
            remaining = PROJECT_DOCS_BUDGET - used
            if len(data) > remaining:
                cut = data[:remaining].decode("utf-8", errors="ignore")
                docs.append(ProjectDoc(path, cut + ("\n" if cut else "") + TRUNCATION_MARKER))
                return docs
            docs.append(ProjectDoc(path, data.decode("utf-8", errors="replace")))
            used += len(data)
    return docs


def render_project_docs(docs: list[ProjectDoc]) -> str:
    """The project-instructions layer of the system prompt; empty when there are none."""
    if not docs:
        return ""
    body = "\n\n".join(f'<project_instructions path="{d.path}">\n{d.content}\n</project_instructions>'
                       for d in docs)
    return "# Project instructions\nFollow these; deeper files take precedence.\n\n" + body
