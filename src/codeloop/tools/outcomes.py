"""What a face reads from a call's outcome: the typed results and errors of the workspace
operations (``ToolCallOutcome.data``), without the operations themselves.

Faces word their fixed texts from these (an :class:`OperationError`'s ``kind``, a
:class:`CommandOutcome`'s ``status``); they never call ``tools/workspace_ops.py`` directly,
only the pipeline does (``lint-imports``, contract ``faces-use-the-pipeline``).
"""

from __future__ import annotations

from codeloop.tools.workspace_ops import (
    CommandOutcome,
    ErrorKind,
    OperationError,
    PlannedChange,
    Written,
    fingerprint,
)

__all__ = ["CommandOutcome", "ErrorKind", "OperationError", "PlannedChange", "Written", "fingerprint"]
