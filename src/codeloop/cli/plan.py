"""Plan mode and headless use of ``codeloop run`` (issue 21): the words and small helpers
``cli/run.py`` needs. The enforcement is :mod:`codeloop.policy.plan_mode`, in the pipeline.

- ``--plan`` / ``mode = "plan"`` / ``/plan``: the session may only read and ends with a plan
  (:data:`PLAN_INSTRUCTIONS`, layer 5 of the system prompt);
- ``/go`` runs the last plan with the normal tools, ``/go TEXT`` runs the user's edited plan;
- ``--output-last-message FILE``: the last assistant message, written atomically
  (:func:`write_last_message`), also when the run failed.
"""

from __future__ import annotations

from pathlib import Path

PLAN_INSTRUCTIONS = (
    "PLAN MODE is on: you may only read. Explore with the read-only tools (and shell, which runs in a "
    "read-only sandbox when it is available); file writes, edits, patches and deletes are refused. "
    "Do not try to change anything. End with your plan as the final answer: a numbered list of the "
    "concrete steps (files, functions, commands) that would do the task. The user reviews it and runs it."
)
"""What the model is told in plan mode (the policy enforces it either way)."""

GO_HINT = "plan mode: nothing was changed. /go runs this plan, /go TEXT runs your edited plan, /plan stays."
"""Shown in a chat after each plan-mode answer."""


def chat_command(text: str) -> tuple[str, str] | None:
    """``("plan", "")`` for ``/plan``, ``("go", edited plan or "")`` for ``/go [TEXT]``, else None."""
    word, *rest = text.strip().split(maxsplit=1)
    if word in ("/plan", "/go"):
        return word[1:], rest[0] if rest else ""
    return None


def go_message(plan: str) -> str:
    """The input that runs ``plan`` after plan mode ends."""
    return f"Plan mode is off: carry out this plan now, with the normal tools.\n\n{plan.strip()}"


def one_shot_hint(log_id: str | None) -> str:
    """Said after a ``--plan`` run: how to run its plan."""
    if not log_id:
        return "plan mode: nothing was changed; the plan is the answer above."
    return (f"plan mode: nothing was changed; the plan is the answer above. Run it: "
            f"codeloop run --resume {log_id} --no-plan \"carry out the plan\"")


class OutputPathError(ValueError):
    """``--output-last-message FILE`` cannot be written where it points."""


def check_output_path(path: Path) -> Path:
    """The absolute path of ``--output-last-message``; OutputPathError when its directory is missing."""
    target = path.expanduser().absolute()
    if target.is_dir():
        raise OutputPathError(f"--output-last-message {str(path)!r} is a directory: pass a file path")
    if not target.parent.is_dir():
        raise OutputPathError(f"--output-last-message {str(path)!r}: directory {str(target.parent)!r} "
                              "does not exist: create it first")
    return target


def write_last_message(path: Path, text: str) -> str | None:
    """Write ``text`` to ``path`` atomically (a reader never sees half of it); the error text
    when that failed (the run's exit code stays its own)."""
    from codeloop.environments.atomic import atomic_write

    try:
        atomic_write(path, text.encode("utf-8"))
    except OSError as exc:
        return f"could not write --output-last-message {str(path)!r}: {exc.strerror or exc}"
    return None
