"""Errors of the code index.

::

    CodeIndexError            any failure of an index operation
    ├── IndexNotBuiltError    the repository has no index yet (run ``codeloop index build``)
    └── NotIndexedError       a file asked about is not in the index (missing, ignored, binary)
"""

from __future__ import annotations


class CodeIndexError(Exception):
    """Base class: an index operation failed; the message says what to do."""


class IndexNotBuiltError(CodeIndexError):
    """Raised when querying a repository that was never indexed."""


class NotIndexedError(CodeIndexError):
    """Raised when a file is not in the index."""
