"""An environment seen through an editor (``codeloop acp``, issue 38): text reads see its
unsaved buffers, and each change of a file is reported so the editor can show it as a diff.

``EditorBuffersEnvironment`` forwards everything to ``inner`` except:

- ``read_file`` (with ``read_buffer``): the path is first judged exactly as a disk read judges
  it (the inner environment reads it: the resolver, the workspace rules, the size bound and the
  link checks all apply, and a file that does not exist or may not be read fails as it would),
  and only then is the editor asked for its text of the canonical path (``fs/read_text_file``).
  When the editor cannot answer, the disk's text is used.
- ``write_file`` and ``delete_file`` (with ``on_change``): after the inner environment changed
  the file, ``on_change(path, old, new)`` gets the canonical path and the text before and after
  (``old`` None for a new file, ``new`` "" for a deleted one; files over
  :data:`MAX_DIFF_BYTES` or not UTF-8 are not reported). The write itself is the inner one:
  codeloop stays the one writer, so a multi-file patch stays all-or-nothing.

``read_bytes`` (fingerprints, images) and commands stay on the disk: a shell command sees the
saved files, not the buffers.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable

from codeloop.environments.base import ExecutionEnvironment
from codeloop.environments.errors import WorkspaceError
from codeloop.environments.local import decode_text, slice_lines
from codeloop.environments.logging_and_read_only import DelegatingExecutionEnvironment
from codeloop.environments.resolver import resolve_workspace_path

ReadBuffer = Callable[[str], Awaitable[str | None]]
"""The editor's text of an absolute path (its unsaved buffer, else the file), None when it
cannot say. Must not raise."""
OnChange = Callable[[str, str | None, str], None]
"""Told of a changed file: canonical path, text before (None: new), text after ("" deleted). Must not raise."""
MAX_DIFF_BYTES = 1024 * 1024
"""Files larger than this are changed without a diff (an editor would not show it usefully)."""


class EditorBuffersEnvironment(DelegatingExecutionEnvironment):
    """``inner`` with text reads answered by the editor once the path passed ``inner``'s checks,
    and its file changes reported."""

    def __init__(self, inner: ExecutionEnvironment, read_buffer: ReadBuffer | None = None,
                 on_change: OnChange | None = None) -> None:
        super().__init__(inner)
        self.read_buffer = read_buffer
        self.on_change = on_change

    async def read_file(self, path: str, offset: int | None = None, limit: int | None = None) -> str:
        if self.read_buffer is None:
            return await self.inner.read_file(path, offset, limit)
        on_disk = await self.inner.read_bytes(path)  # judged (and bounded) as every read is
        target = resolve_workspace_path(self.inner.working_directory(), path)
        text = await self.read_buffer(str(target))
        return slice_lines(decode_text(on_disk, path) if text is None else text, offset, limit)

    async def _text_before(self, path: str) -> tuple[bool, str | None]:
        """(reportable, the file's text now: None when it does not exist)."""
        with contextlib.suppress(WorkspaceError, OSError):
            if not await self.inner.file_exists(path):
                return True, None
            info = await self.inner.stat(path)
            if info.is_dir or info.size > MAX_DIFF_BYTES:
                return False, None
            return True, (await self.inner.read_bytes(path)).decode("utf-8")
        return False, None

    def _report(self, path: str, old: str | None, new: str) -> None:
        if self.on_change is not None:
            with contextlib.suppress(WorkspaceError, OSError):
                self.on_change(str(resolve_workspace_path(self.inner.working_directory(), path)), old, new)

    async def write_file(self, path: str, content: str | bytes) -> int:
        if self.on_change is None:
            return await self.inner.write_file(path, content)
        try:
            reportable, old = await self._text_before(path)
        except UnicodeDecodeError:
            reportable, old = False, None
        written = await self.inner.write_file(path, content)
        if reportable and len(content) <= MAX_DIFF_BYTES:
            try:
                new = content if isinstance(content, str) else content.decode("utf-8")
            except UnicodeDecodeError:
                return written
            self._report(path, old, new)
        return written

    async def delete_file(self, path: str) -> None:
        if self.on_change is None:
            await self.inner.delete_file(path)
            return
        try:
            reportable, old = await self._text_before(path)
        except UnicodeDecodeError:
            reportable, old = False, None
        await self.inner.delete_file(path)
        if reportable and old is not None:
            self._report(path, old, "")
