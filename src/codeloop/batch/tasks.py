"""``TASKS.jsonl`` of ``codeloop batch`` (issue 39): one task per line, validated before any runs.

Each line is a JSON object::

    {"id": "fix-1", "instruction": "make the tests pass",
     "workspace": {"git": "../repos/app", "revision": "v1.2"},   # or {"dir": "fixtures/app"}; absent: empty
     "model": {"model": "gpt-4.1-mini", "provider": "openai", "base_url": "..."},   # optional
     "limits": {"max_turns": 30, "max_cost": 0.5, "max_tokens": 200000, "max_time": "10m"},  # optional
     "timeout": 900,                                                # seconds, optional
     "check": "python -m pytest -q"}                                # optional, run in the workspace

Relative paths of ``dir`` and of a local ``git`` repository are relative to the tasks file.
:func:`load_tasks` reads the whole file first and raises :class:`TaskFileError` with every
problem, one line each, named by line number and field: nothing starts while one line is wrong.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from codeloop.environments.task_workspace import WorkspaceSource

TASK_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"
"""A task id names its directories, so it is a safe file name (no ``/``, no ``..``)."""
MAX_TASK_FILE_BYTES = 64 * 1024 * 1024
"""A tasks file larger than this is refused before it is read."""


class TaskFileError(ValueError):
    """The tasks file cannot be used; ``problems`` holds one line per problem."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class WorkspaceSpec(_Strict):
    """Where the workspace comes from: ``dir``, or ``git`` (+ ``revision``)."""

    dir: str | None = Field(default=None, min_length=1)
    git: str | None = Field(default=None, min_length=1)
    revision: str | None = Field(default=None, min_length=1)

    @model_validator(mode="after")
    def _one_source(self) -> WorkspaceSpec:
        if self.dir is not None and self.git is not None:
            raise ValueError("give dir or git, not both")
        if self.revision is not None and self.git is None:
            raise ValueError("revision goes with git")
        if self.revision is not None and self.revision.startswith("-"):
            raise ValueError("revision cannot start with '-'")
        return self


class ModelSpec(_Strict):
    """``codeloop run``'s model options for this task (unset: the batch's own)."""

    model: str | None = Field(default=None, min_length=1)
    provider: str | None = Field(default=None, min_length=1)
    profile: str | None = Field(default=None, min_length=1)
    base_url: str | None = Field(default=None, min_length=1)


class LimitsSpec(_Strict):
    """``codeloop run``'s limits for this task (issue 36)."""

    max_turns: int | None = Field(default=None, ge=0, le=1_000_000)
    max_cost: float | None = Field(default=None, ge=0)
    max_tokens: int | None = Field(default=None, ge=1)
    max_time: str | float | None = None
    """Seconds, or a duration such as ``90s``, ``5m``, ``1h30m``."""

    @field_validator("max_time")
    @classmethod
    def _duration(cls, value: str | float | None) -> str | float | None:
        from codeloop.config import parse_duration

        if isinstance(value, str):
            parse_duration(value)  # ValueError names what is wrong
        elif value is not None and value <= 0:
            raise ValueError("must be more than 0 seconds")
        return value


class TaskSpec(_Strict):
    """One line of the tasks file."""

    id: str = Field(pattern=TASK_ID_PATTERN)
    instruction: str = Field(min_length=1)
    workspace: WorkspaceSpec | None = None
    model: ModelSpec = ModelSpec()
    limits: LimitsSpec = LimitsSpec()
    timeout: float | None = Field(default=None, gt=0, le=7 * 24 * 3600)
    """Seconds of wall-clock time for the session (then its status is ``timeout``; the check
    still runs, with the shell tool's own limit)."""
    check: str | None = Field(default=None, min_length=1)
    """A shell command run in the workspace when the session ends: exit 0 means solved."""

    @field_validator("id")
    @classmethod
    def _no_dots(cls, value: str) -> str:
        if ".." in value:
            raise ValueError("cannot contain '..'")
        return value

    @field_validator("timeout", mode="before")
    @classmethod
    def _int_is_float(cls, value: Any) -> Any:
        return float(value) if isinstance(value, int) and not isinstance(value, bool) else value

    def source(self, base: Path) -> WorkspaceSource:
        """The workspace source, relative paths taken from ``base`` (the tasks file's directory)."""
        spec = self.workspace
        if spec is None:
            return WorkspaceSource()
        if spec.dir is not None:
            return WorkspaceSource(directory=(base / spec.dir).resolve())
        assert spec.git is not None
        local = "://" not in spec.git and not spec.git.startswith("git@")
        return WorkspaceSource(git=str((base / spec.git).resolve()) if local else spec.git, revision=spec.revision)


def _where(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(part) for part in loc) or "(line)"


def parse_line(text: str, number: int) -> tuple[TaskSpec | None, list[str]]:
    """One line into a task, or the problems of that line (``line N: FIELD: what``)."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, [f"line {number}: not JSON: {exc.msg} (column {exc.colno})"]
    if not isinstance(raw, dict):
        return None, [f"line {number}: a task is a JSON object, not {type(raw).__name__}"]
    # JSON floats for LimitsSpec.max_cost/max_time: strict mode refuses ints for floats.
    limits = raw.get("limits")
    if isinstance(limits, dict):
        raw = {**raw, "limits": {k: float(v) if k in ("max_cost", "max_time") and type(v) is int else v
                                 for k, v in limits.items()}}
    try:
        return TaskSpec.model_validate(raw), []
    except ValidationError as exc:
        return None, [f"line {number}: {_where(error['loc'])}: {error['msg']}" for error in exc.errors()]


def load_tasks(path: Path) -> list[TaskSpec]:
    """Every task of ``path``; TaskFileError with all the problems found (blank lines are skipped)."""
    try:
        if path.stat().st_size > MAX_TASK_FILE_BYTES:
            raise TaskFileError([f"{path}: larger than {MAX_TASK_FILE_BYTES // (1024 * 1024)} MiB"])
        data = path.read_bytes()
    except OSError as exc:
        raise TaskFileError([f"{path}: cannot be read: {exc.strerror or exc}"]) from None
    tasks: list[TaskSpec] = []
    problems: list[str] = []
    first_line: dict[str, int] = {}
    for number, raw_line in enumerate(data.split(b"\n"), start=1):
        try:
            text = raw_line.decode("utf-8")
        except UnicodeDecodeError:
            problems.append(f"line {number}: not UTF-8 text")
            continue
        if not text.strip():
            continue
        task, errors = parse_line(text, number)
        problems += errors
        if task is None:
            continue
        if task.id in first_line:
            problems.append(f"line {number}: id: {task.id!r} is already the id of line {first_line[task.id]}")
            continue
        first_line[task.id] = number
        tasks.append(task)
    if not tasks and not problems:
        problems.append(f"{path}: no tasks (one JSON object per line)")
    if problems:
        raise TaskFileError(problems)
    return tasks
