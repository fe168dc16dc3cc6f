"""Layer 2 of the system prompt (loop spec §6.1): the ``<environment>`` block (§6.3) and
the git snapshot (§6.4), gathered once at session start. The layers are joined by
:meth:`codeloop.profiles.base.ProviderProfile.build_system_prompt`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from codeloop.environments.base import ExecutionEnvironment

_GIT_SNAPSHOT = (
    "git rev-parse --is-inside-work-tree >/dev/null 2>&1 || exit 3; "
    "git rev-parse --abbrev-ref HEAD 2>/dev/null; echo '---codeloop---'; "
    "git status --porcelain 2>/dev/null | head -n 2000; echo '---codeloop---'; "
    "git log --oneline -n 8 2>/dev/null"
)


@dataclass(frozen=True)
class GitSnapshot:
    """Repository state at session start (§6.4)."""

    branch: str
    """Current branch (``HEAD`` when detached)."""
    modified: int
    """Tracked files with changes (staged or not)."""
    untracked: int
    """Untracked files."""
    recent_commits: tuple[str, ...]
    """``<sha> <subject>`` of the last commits, newest first."""


@dataclass(frozen=True)
class EnvironmentContext:
    """What the ``<environment>`` block says (§6.3)."""

    working_directory: str
    """Absolute workspace root."""
    platform: str
    """``linux``, ``darwin``, ``windows``..."""
    os_version: str
    """Operating-system version string."""
    today: str
    """``YYYY-MM-DD``."""
    model: str
    """Model display name."""
    knowledge_cutoff: str
    """Model knowledge cutoff, ``unknown`` when not known."""
    git: GitSnapshot | None
    """Git snapshot, None outside a repository."""


def parse_git_snapshot(output: str) -> GitSnapshot | None:
    """Parse the output of the snapshot command; None when it is not a repository."""
    sections = output.split("---codeloop---")
    if len(sections) != 3:
        return None
    branch = sections[0].strip() or "HEAD"
    status_lines = [ln for ln in sections[1].splitlines() if ln.strip()]
    untracked = sum(1 for ln in status_lines if ln.startswith("??"))
    commits = tuple(ln.strip() for ln in sections[2].splitlines() if ln.strip())
    return GitSnapshot(branch, len(status_lines) - untracked, untracked, commits)


async def gather_environment_context(
    env: ExecutionEnvironment, model: str, knowledge_cutoff: str = "unknown"
) -> EnvironmentContext:
    """Collect the §6.3 facts and the §6.4 git snapshot (one short command)."""
    result = await env.exec_command(_GIT_SNAPSHOT, timeout_ms=5_000)
    git = parse_git_snapshot(result.stdout) if result.exit_code == 0 else None
    return EnvironmentContext(
        working_directory=env.working_directory(),
        platform=env.platform(),
        os_version=env.os_version(),
        today=date.today().isoformat(),
        model=model,
        knowledge_cutoff=knowledge_cutoff,
        git=git,
    )


def render_environment(ctx: EnvironmentContext) -> str:
    """The ``<environment>`` block, followed by the git snapshot when in a repository."""
    lines = [
        "<environment>",
        f"Working directory: {ctx.working_directory}",
        f"Is git repository: {'true' if ctx.git else 'false'}",
    ]
    if ctx.git:
        lines.append(f"Git branch: {ctx.git.branch}")
    lines += [
        f"Platform: {ctx.platform}",
        f"OS version: {ctx.os_version}",
        f"Today's date: {ctx.today}",
        f"Model: {ctx.model}",
        f"Knowledge cutoff: {ctx.knowledge_cutoff}",
        "</environment>",
    ]
    if ctx.git:
        lines += [
            "<git_status>",
            f"Branch: {ctx.git.branch}",
            f"Modified files: {ctx.git.modified}, untracked files: {ctx.git.untracked}",
            "Recent commits:",
            *[f"  {c}" for c in ctx.git.recent_commits],
            "This is a snapshot from the session start; run git via the shell for the current state.",
            "</git_status>",
        ]
    return "\n".join(lines)

