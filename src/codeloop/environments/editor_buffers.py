"""An environment whose text reads see an editor's unsaved buffers (``codeloop acp``, issue 38).

``EditorBuffersEnvironment`` forwards everything to ``inner`` except ``read_file``: the path is
first judged exactly as a disk read judges it (the inner environment reads it: the resolver,
the workspace rules, the size bound and the link checks all apply, and a file that does not
exist or may not be read fails as it would), and only then is the editor asked for its text of
the canonical path (``fs/read_text_file``). When the editor cannot answer, the disk's text is
used. Writes, deletes, ``read_bytes`` (fingerprints, images) and commands stay on the disk:
codeloop remains the one writer, and a shell command sees the saved files, not the buffers.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from codeloop.environments.base import ExecutionEnvironment
from codeloop.environments.local import decode_text, slice_lines
from codeloop.environments.logging_and_read_only import DelegatingExecutionEnvironment
from codeloop.environments.resolver import resolve_workspace_path

ReadBuffer = Callable[[str], Awaitable[str | None]]
"""The editor's text of an absolute path (its unsaved buffer, else the file), None when it
cannot say. Must not raise."""


class EditorBuffersEnvironment(DelegatingExecutionEnvironment):
    """``inner`` with text reads answered by the editor once the path passed ``inner``'s checks."""

    def __init__(self, inner: ExecutionEnvironment, read_buffer: ReadBuffer) -> None:
        super().__init__(inner)
        self.read_buffer = read_buffer

    async def read_file(self, path: str, offset: int | None = None, limit: int | None = None) -> str:
        on_disk = await self.inner.read_bytes(path)  # judged (and bounded) as every read is
        target = resolve_workspace_path(self.inner.working_directory(), path)
        text = await self.read_buffer(str(target))
        return slice_lines(decode_text(on_disk, path) if text is None else text, offset, limit)
