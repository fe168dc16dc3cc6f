"""The relay's view of a workspace: its pipeline (over one ExecutionEnvironment), the
listing and the requested file contents of an outbox.

Every workspace access goes through :func:`open_workspace`'s pipeline and its environment,
so paths are judged by the session's policy and the one resolver, and RUN_COMMAND runs
through the one process runner with ``/bin/sh -c`` (spec "RUN_COMMAND").
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from codeloop.environments.base import ExecLimits, ExecutionEnvironment
from codeloop.policy.pending import PendingStore
from codeloop.relay.config import RelayConfig
from codeloop.relay.executor import read_contents
from codeloop.relay.outbox import RequestedFile, WorkspaceListing
from codeloop.tools.call_path import Pipeline, open_environment
from codeloop.tools.pipeline import Checkpoint
from codeloop.tools.relay_tools import relay_pipeline

HIDDEN_DIRS = frozenset({".git", ".hg", ".svn"})
"""Version-control internals: never listed (thousands of files nobody edits by hand)."""
LISTING_DEPTH = 64
"""Directory levels walked for the listing."""


def open_workspace(workspace: Path, config: RelayConfig, policy_name: str, pending: PendingStore | None = None,
                   session: str = "", checkpoint: Checkpoint | None = None) -> Pipeline:
    """The relay's pipeline under the session's policy ``policy_name``, on a local environment
    on ``workspace`` whose commands use ``/bin/sh`` and may run for ``config.timeout_ms`` (the
    environment's maximum is raised to allow it); its asks wait in ``pending`` as entries of
    relay session ``session``."""
    limits = ExecLimits(default_timeout_ms=config.timeout_ms, max_timeout_ms=max(config.timeout_ms, 600_000))
    env = open_environment(workspace, sandbox="off", network=True, shell="/bin/sh", limits=limits)
    return relay_pipeline(env, policy_name, config.output_limit_chars, pending, session, checkpoint)


async def list_workspace(env: ExecutionEnvironment, max_files: int) -> WorkspaceListing:
    """Files of the workspace, sorted by path, with sizes; VCS internals are skipped and
    at most ``max_files`` are listed (0: all)."""
    entries = await env.list_directory(".", depth=LISTING_DEPTH)
    files: list[tuple[str, int]] = []
    hidden: set[str] = set()
    for entry in entries:
        top = entry.name.split("/", 1)[0]
        if any(part in HIDDEN_DIRS for part in entry.name.split("/")):
            if top in HIDDEN_DIRS:
                hidden.add(top)
            continue
        if not entry.is_dir:
            files.append((entry.name, entry.size or 0))
    files.sort()
    shown = files if max_files <= 0 else files[:max_files]
    return WorkspaceListing(shown, len(files) - len(shown), sorted(hidden))


async def read_requested(pipeline: Pipeline, paths: Sequence[str], max_chars: int) -> list[RequestedFile]:
    """Contents of the READ_FILE paths, as they are now, each read through the pipeline (the
    policy judges it again); a file that vanished, became binary, is refused or is too long
    gets a note instead of (or after) its text."""
    return [await _requested(pipeline, path, max_chars) for path in paths]


async def _requested(pipeline: Pipeline, path: str, max_chars: int) -> RequestedFile:
    data = await read_contents(pipeline, path)
    if isinstance(data, str):
        return RequestedFile(path, None, f"({data})")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return RequestedFile(path, None, f"(binary file, {len(data)} bytes; not shown)")
    if 0 < max_chars < len(text):
        note = (f"[... file truncated: showing {max_chars} of {len(text)} characters; "
                "view other parts with RUN_COMMAND, e.g. sed -n '200,300p' FILE ...]")
        return RequestedFile(path, text[:max_chars].rsplit("\n", 1)[0] + "\n", note)
    return RequestedFile(path, text)
