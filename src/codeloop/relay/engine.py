"""The relay loop: start a session, apply replies, re-offer outboxes (relay spec
"Session Management"), idempotent under crashes.

A step applies each pending inbox file, oldest first, as the answer to the session's
newest outbox, and writes the next outbox. Order of a step, and why a crash (kill -9) at
any instant loses nothing and applies nothing twice:

1. **Claim**: rename ``inbox/NAME.txt`` to ``inbox/processing/{id}_seq{NNNN}__NAME.txt``.
   The rename is atomic and binds the reply to outbox NNNN; a later step finds it there.
2. **Apply**: run the commands in order, journaling each effect before it happens and
   each result after (:mod:`codeloop.relay.journal`). A rerun replays done results,
   checks half-done effects, and runs the rest.
3. **Write** the next outbox (atomically; rewriting it gives the same file).
4. **Commit**: replace the session file (atomically) with the next sequence number.
5. **Archive**: move the claimed file to ``inbox/processed/``. A claim left behind for
   an older sequence only needs this move.

The same text saved later as the answer to a newer outbox is a new reply: claims and
journals are keyed by sequence number, never by content.

A command the session's policy sends for approval (:mod:`codeloop.relay.approvals`) pauses
step 2: it becomes an entry of the approvals store, the next outbox is written saying it
waits, the session file records where the reply stopped, and the claim stays in
``inbox/processing``. Once the store has an answer (:func:`answer_held`, or any other
process deciding through the store), the next step finishes the same claimed reply (the
journal replays what already ran; an approved entry runs only after its claim), so the held
command runs at most once, and no later reply is taken before it is answered.

Steps on one root are serialised with an advisory lock on ``sessions/.lock`` (released by
the kernel if the process dies).

A reply whose application raises (anything but a kill) is set aside in ``inbox/rejected/``
with a note and its journal, so later steps go on (issue 32); so are replies that come after
the session's step or time limit was reached (:mod:`codeloop.relay.limits`, issue 36). The
module is over 500 lines because claim, apply, archive and set-aside move the same files in
one order that the crash argument above depends on; split across modules, that order would
be harder to audit.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import functools
import getpass
import os
import re
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from codeloop.environments.atomic import atomic_write
from codeloop.environments.errors import WorkspaceError
from codeloop.environments.owned_files import read_owned_file
from codeloop.policy.pending import AlreadyDecided, PendingCall, PendingStore, UnknownPendingCallError
from codeloop.relay.approvals import HeldCommand, answered, approvals_store, hold, waiting_result
from codeloop.relay.commands import Done, Message, ReadFile, RelayCommand
from codeloop.relay.config import RelayConfig
from codeloop.relay.executor import ExecutionLimits, Held, execute_command, recover_effect
from codeloop.relay.journal import JournalError, StepJournal, journal_path
from codeloop.relay.limits import SessionLimits, not_run, reached, set_aside_reason, spent, time_left_ms
from codeloop.relay.limits import notice as limit_notice
from codeloop.relay.outbox import render_outbox
from codeloop.relay.parser import parse_inbox
from codeloop.relay.progress import (
    CommandFinished,
    EventSink,
    LimitReached,
    ModelMessage,
    OutboxWritten,
    RelayEvent,
    ReplySkipped,
    ReplyStarted,
    SessionCompleted,
)
from codeloop.relay.results import CommandResult
from codeloop.relay.session import (
    SessionFileError,
    SessionState,
    list_sessions,
    load_session,
    new_session_id,
    save_session,
    utc_now,
)
from codeloop.relay.workspace import list_workspace, open_workspace, read_requested
from codeloop.sessions.rewind import RewindRefusedError, RewindResult, redo_run, rewind_run, run_checkpoints
from codeloop.tools.call_path import Pipeline

LOCK_WAIT_S = 60.0
"""How long a step waits for another step on the same root to finish."""

NO_COMMANDS = CommandResult("REPLY", False, "No command blocks were found in your reply. Answer with the "
                            'blocks described under PROTOCOL, for example [READ_FILE path="README.md"], or '
                            "[DONE] summary [/DONE] when finished.")


class RelayError(Exception):
    """A user-facing failure of a relay command: the message says what to do."""


@dataclass
class StepReport:
    """What one ``relay step`` did."""

    session: SessionState
    """The session state after the step."""
    replies: int = 0
    """Replies applied."""
    events: list[RelayEvent] = field(default_factory=list)
    """Everything emitted, in order."""
    blocked: bool = False
    """True when an inbox file could not be read and must be fixed first."""


# --- files of the root ----------------------------------------------------------------


def outbox_path(config: RelayConfig, state: SessionState) -> Path:
    """The newest outbox of a session."""
    return config.outbox_dir / state.outbox_name()


def pending_replies(config: RelayConfig) -> list[Path]:
    """``.txt`` files directly in the inbox, oldest last write first (spec "Inbox File
    Naming"); hidden files (editor temporaries) are skipped."""
    found: list[tuple[int, str, Path]] = []
    try:
        entries = list(os.scandir(config.inbox_dir))
    except FileNotFoundError:
        return []
    for entry in entries:
        if entry.name.startswith(".") or not entry.name.lower().endswith(".txt"):
            continue
        try:
            if entry.is_file(follow_symlinks=False):
                found.append((entry.stat(follow_symlinks=False).st_mtime_ns, entry.name, Path(entry.path)))
        except OSError:
            continue
    return [path for _, _, path in sorted(found)]


def decode_reply(data: bytes) -> str:
    """Reply text: UTF-8 (BOM allowed) or UTF-16 with a BOM (Windows Notepad).
    Raises ``UnicodeDecodeError`` for anything else."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16")
    return data.decode("utf-8-sig")


def _claim_prefix(state: SessionState, sequence: int | None = None) -> str:
    return f"{state.session_id}_seq{state.sequence_number if sequence is None else sequence:04d}__"


def _claims(config: RelayConfig, state: SessionState) -> list[Path]:
    prefix = f"{state.session_id}_seq"
    try:
        return sorted(p for p in config.processing_dir.iterdir() if p.name.startswith(prefix))
    except FileNotFoundError:
        return []


def _move(path: Path, target: Path) -> Path:
    """Move ``path`` to ``target``, or beside it under a unique name when that is taken."""
    if target.exists():
        target = target.with_name(f"{target.stem}.{time.time_ns()}{target.suffix}")
    os.replace(path, target)
    return target


def _set_aside(config: RelayConfig, state: SessionState, path: Path, why: str,
               fix: str = "Save the reply as UTF-8 text and put it in the inbox again.") -> Path:
    """Move an inbox file that cannot be applied to ``inbox/rejected/`` with a ``.note`` saying why."""
    config.rejected_dir.mkdir(parents=True, exist_ok=True)
    name = path.name.removeprefix(_claim_prefix(state))
    target = _move(path, config.rejected_dir / (_claim_prefix(state) + name))
    atomic_write(target.with_name(target.name + ".note"), f"{name} was not applied: {why}. {fix}\n".encode())
    return target


def _reject_claim(config: RelayConfig, state: SessionState, claim: Path, exc: Exception,
                  emit: EventSink) -> None:
    """A claimed reply whose application failed (any exception: a damaged journal, a full
    disk, a bug): set it aside with a note, and its journal with it, so later steps take the
    next reply instead of failing on this one again (issue 32)."""
    journal = journal_path(config.journal_dir, state.session_id, state.sequence_number)
    ran: int | None = None
    with contextlib.suppress(OSError, JournalError):
        ran = StepJournal.open(config.journal_dir, state.session_id, state.sequence_number, "").applied
    with contextlib.suppress(FileNotFoundError):  # a new reply to this outbox must not replay its results
        _move(journal, journal.with_name(f"{journal.stem}.rejected{journal.suffix}"))
    # Our own errors say what to do already; anything else is named by its type (MemoryError has no text).
    failed = str(exc) if isinstance(exc, RelayError | WorkspaceError) and str(exc) else (
        f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
    ran_text = ("None of its commands had run; " if ran == 0 else
                f"{ran} of its commands had already run (their effects stay in the workspace); " if ran else
                "Its step journal could not be read, so check the workspace for what already ran; ")
    moved = _set_aside(config, state, claim, f"applying it failed ({failed})",
                       f"{ran_text}fix the cause, then put the reply (without the commands that ran) into the "
                       "inbox again, or answer the newest outbox anew.")
    emit(ReplySkipped(moved, f"{moved.name.removeprefix(_claim_prefix(state))} failed ({failed}); it was moved to "
                      f"{moved} (what to do is in {moved.name}.note); later replies go on", blocking=False))


def _archive(config: RelayConfig, claim: Path) -> None:
    _move(claim, config.processed_dir / claim.name)


@contextlib.contextmanager
def _root_lock(config: RelayConfig) -> Iterator[None]:
    config.sessions_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(config.sessions_dir / ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        deadline = time.monotonic() + LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise RelayError(f"another relay step on {config.root} has been running for over "
                                     f"{LOCK_WAIT_S:g} s; wait for it or stop it, then try again") from None
                time.sleep(0.1)
        yield
    finally:
        os.close(fd)


# --- sessions -------------------------------------------------------------------------


def find_session(config: RelayConfig, session_id: str | None = None) -> SessionState:
    """The named session, or the most recently updated session that is not complete."""
    if not config.sessions_dir.is_dir():
        raise RelayError(f"no relay session in {config.root} (no {config.sessions_dir}); check --root, or "
                         f'start one with codeloop relay new "TASK" --root {config.root}')
    if session_id:
        try:
            return load_session(config.sessions_dir, session_id)
        except SessionFileError as exc:
            raise RelayError(str(exc)) from None
    sessions = [s for s in list_sessions(config.sessions_dir) if isinstance(s, SessionState)]
    open_sessions = [s for s in sessions if not s.is_complete]
    if open_sessions:
        return open_sessions[0]
    if sessions:
        raise RelayError(f"every session in {config.sessions_dir} is complete; start a new one with "
                         f'codeloop relay new "TASK" --root {config.root}')
    raise RelayError(f"no relay session in {config.root}; start one with codeloop relay new "
                     f'"TASK" --root {config.root}')


def _require_workspace(state: SessionState) -> None:
    """Stop before a reply is taken when the session's workspace has disappeared."""
    if not os.path.isdir(state.workspace):
        raise RelayError(f"the workspace {state.workspace} of session {state.session_id} does not exist any "
                         "more; restore it (or create it empty with mkdir) and run the step again")


def _check_layout(config: RelayConfig, workspace: Path) -> None:
    """The model must not reach the relay's own files (it could write its own replies)."""
    for name, directory in (("inbox", config.inbox_dir), ("outbox", config.outbox_dir),
                            ("sessions", config.sessions_dir)):
        if directory == workspace or workspace in directory.parents:
            raise RelayError(f"the workspace {workspace} contains the relay's {name} directory {directory}; "
                             "choose a workspace outside them (the default is ROOT/workspace)")


async def write_outbox(config: RelayConfig, state: SessionState, pipeline: Pipeline) -> Path:
    """Write the session's newest outbox atomically and return its path."""
    listing = await list_workspace(pipeline.env, config.max_listed_files)
    requested = await read_requested(pipeline, state.read_file_requests, config.max_read_chars)
    path = outbox_path(config, state)
    config.outbox_dir.mkdir(parents=True, exist_ok=True)
    atomic_write(path, render_outbox(state, listing, requested).encode("utf-8"))
    return path


async def start_session(config: RelayConfig, task: str, workspace: Path | None = None,
                        limits: SessionLimits = SessionLimits()) -> tuple[SessionState, Path]:
    """Create a session (with ``limits`` on its steps and time) and its first outbox; return both."""
    if not task.strip():
        raise RelayError('the task is empty; describe what to do, e.g. codeloop relay new "add a README"')
    ws = (workspace or config.workspace).expanduser().resolve()
    if ws.exists() and not ws.is_dir():
        raise RelayError(f"the workspace {ws} is a file; give a directory with --workspace")
    _check_layout(config, ws)
    ws.mkdir(parents=True, exist_ok=True)
    config.ensure_dirs()
    with _root_lock(config):
        state = SessionState(session_id=new_session_id(config.sessions_dir), task=task, workspace=str(ws),
                             policy=config.policy, limits=limits)
        path = await write_outbox(config, state, open_workspace(ws, config, state.policy))
        save_session(config.sessions_dir, state)
    return state, path


# --- steps ----------------------------------------------------------------------------


def _claim_next(config: RelayConfig, state: SessionState, emit: EventSink) -> Path | bool | None:
    """Claim the oldest readable reply; None when there is none, False when blocked."""
    for path in pending_replies(config):
        try:
            text = decode_reply(read_owned_file(path))
        except FileNotFoundError:
            continue
        except WorkspaceError as exc:  # over the size bound, or no longer a regular file
            moved = _set_aside(config, state, path, str(exc), "Put a smaller reply (plain text) into the inbox.")
            emit(ReplySkipped(moved, f"{exc}; it was moved to {moved}", blocking=False))
            continue
        except UnicodeDecodeError as exc:
            # Moved aside, not left in place: later replies must not wait behind it.
            moved = _set_aside(config, state, path, f"not UTF-8 text ({exc.reason} at byte {exc.start})")
            emit(ReplySkipped(moved, f"{path.name} is not UTF-8 text; it was moved to {moved} (the reason is in "
                              f"{moved.name}.note); save the reply as UTF-8 (plain text) into {config.inbox_dir}/ "
                              "again", blocking=False))
            continue
        except OSError as exc:
            emit(ReplySkipped(path, f"cannot read {path.name}: {exc}", blocking=True))
            return False
        if not text.strip():
            emit(ReplySkipped(path, f"{path.name} is empty; paste the model's reply into it and save",
                              blocking=False))
            continue
        claim = config.processing_dir / (_claim_prefix(state) + path.name)
        config.processing_dir.mkdir(parents=True, exist_ok=True)
        try:
            os.replace(path, claim)
        except FileNotFoundError:
            continue
        return claim
    return None


async def _apply_reply(config: RelayConfig, state: SessionState, pipeline: Pipeline, claim: Path,
                       emit: EventSink, store: PendingStore) -> SessionState:
    source = claim.name[len(_claim_prefix(state)) :]
    if state.held is None:  # an ask left behind by a step that stopped before recording it: asked anew
        store.withdraw(state.session_id, "the relay stopped before it recorded this ask; the command is asked again")
    commands = parse_inbox(decode_reply(await asyncio.to_thread(read_owned_file, claim)))
    try:
        journal = StepJournal.open(config.journal_dir, state.session_id, state.sequence_number, source)
    except JournalError as exc:
        raise RelayError(str(exc)) from None
    emit(ReplyStarted(state.session_id, state.sequence_number, source, journal.applied))
    limits = ExecutionLimits(config.timeout_ms, config.output_limit_chars)
    results: list[CommandResult] = []
    reads: list[str] = []
    summary: str | None = None
    skipped = 0
    for index, cmd in enumerate(commands):
        entry = journal.entries.get(index)
        result = entry.result if entry else None
        replayed = result is not None
        if result is None:
            result = await recover_effect(entry.effect, pipeline.env) if entry and entry.effect else None
            left = time_left_ms(state)
            held = state.held if state.held is not None and state.held.index == index else None
            asked = _entry(store, held)
            if result is not None and asked is not None and asked.status == "running":
                store.finish(asked.id, "ran" if result.success else "interrupted")  # its effect was journaled
            if result is None and left == 0 and not isinstance(cmd, Message | Done | ReadFile):
                result = not_run(cmd.name)  # the time is used up: nothing more of the reply changes the workspace
            if result is None:
                answer = False if held is None else answered(cmd, asked)
                if answer is None:  # still waiting (never so after the step's check): the reply stays held
                    return state
                if isinstance(answer, CommandResult) and asked is not None and asked.status == "running":
                    store.finish(asked.id, "interrupted")  # claimed by a step that stopped: never run again
                began = time.monotonic()
                ran = answer if isinstance(answer, CommandResult) else await execute_command(
                    cmd, pipeline, state.policy, _within_time(limits, left), functools.partial(journal.begin, index),
                    marker=f"{state.session_id}-seq{state.sequence_number:04d}-cmd{index}",
                    approved=held.pending if answer is True and held is not None else None, step=state.sequence_number)
                state = spent(state, time.monotonic() - began)
                if isinstance(ran, Held):
                    held = hold(cmd, index, state.sequence_number, ran.reason, ran.pending)
                    rest = len(commands) - index - 1
                    return await _hold(config, state, pipeline, held, (cmd, rest), results, reads, emit)
                result = ran
                if left is not None and left < limits.timeout_ms and time_left_ms(state) == 0 and not result.success:
                    result = replace(result, summary=f"{result.summary} (the session's time limit, --max-time, "
                                                     "was used up)")
            journal.done(index, result)
        results.append(result)
        emit(CommandFinished(index, result, replayed))
        if isinstance(cmd, Message) and not replayed:
            emit(ModelMessage(cmd.text))
        if isinstance(cmd, ReadFile) and result.success and cmd.path not in reads:
            reads.append(cmd.path)
        if isinstance(cmd, Done):
            summary = cmd.summary
            skipped = len(commands) - index - 1
            break
    new_state = state.advanced(tuple(results) if commands else (NO_COMMANDS,), tuple(reads), summary)
    path = None if new_state.is_complete else await write_outbox(config, new_state, pipeline)
    save_session(config.sessions_dir, new_state)
    _archive(config, claim)
    if path is not None:
        emit(OutboxWritten(new_state.session_id, new_state.sequence_number, path))
        limit = reached(new_state)
        if limit is not None:
            emit(LimitReached(new_state.session_id, limit, limit_notice(new_state) or ""))
    else:
        emit(SessionCompleted(new_state.session_id, summary or "", skipped))
    return new_state


def _within_time(limits: ExecutionLimits, left_ms: int | None) -> ExecutionLimits:
    """A RUN_COMMAND's limits, its timeout cut to the session's time left."""
    return limits if left_ms is None else replace(limits, timeout_ms=max(min(limits.timeout_ms, left_ms), 1))


def _set_aside_over_limit(config: RelayConfig, state: SessionState, emit: EventSink) -> None:
    """Move every pending reply to ``inbox/rejected/``: a limit of the session is reached."""
    why, fix = set_aside_reason(state)
    for path in pending_replies(config):
        try:
            moved = _set_aside(config, state, path, why, fix)
        except FileNotFoundError:
            continue
        emit(ReplySkipped(moved, f"{path.name} was not applied: {why}; it was moved to {moved}", blocking=False))


async def _hold(config: RelayConfig, state: SessionState, pipeline: Pipeline, held: HeldCommand,
                cmd_and_rest: tuple[RelayCommand, int], results: list[CommandResult], reads: list[str],
                emit: EventSink) -> SessionState:
    """Stop the reply at a held command: the next outbox says it waits, then the session
    file records it (a crash in between holds it again on the next step)."""
    waiting = waiting_result(cmd_and_rest[0], held, cmd_and_rest[1])
    emit(CommandFinished(held.index, waiting))
    # The waiting outbox never says a limit is reached: the reply is not finished.
    preview = replace(state.advanced((*results, waiting), tuple(reads), None), limits=SessionLimits())
    path = await write_outbox(config, preview, pipeline)
    state = replace(state, held=held, updated_at=utc_now())
    save_session(config.sessions_dir, state)
    emit(OutboxWritten(preview.session_id, preview.sequence_number, path))
    return state


def _entry(store: PendingStore, held: HeldCommand | None) -> PendingCall | None:
    """The store's entry of a held command (None when nothing is held, or the store lost it)."""
    if held is None:
        return None
    try:
        return store.get(held.pending)
    except UnknownPendingCallError:
        return None


def waiting_for_answer(state: SessionState, store: PendingStore | None = None) -> HeldCommand | None:
    """The held command the store has no answer for yet, if any."""
    if state.held is None:
        return None
    entry = _entry(store or approvals_store(), state.held)
    return state.held if entry is not None and entry.status == "pending" else None


async def _step_locked(config: RelayConfig, state: SessionState, emit: EventSink, *,
                       take_new: bool) -> tuple[SessionState, int, bool]:
    _require_workspace(state)
    store = approvals_store()
    # Each reply's changing commands are snapshotted (issue 35: codeloop relay rewind).
    pipeline = open_workspace(Path(state.workspace), config, state.policy, store, state.session_id,
                              run_checkpoints(f"relay-{state.session_id}", state.workspace))
    applied = 0
    for stale in _claims(config, state):
        if not stale.name.startswith(_claim_prefix(state)):
            _archive(config, stale)  # committed before the crash; only the move was missing
    while not state.is_complete and waiting_for_answer(state, store) is None:
        current = [c for c in _claims(config, state) if c.name.startswith(_claim_prefix(state))]
        claim: Path | bool | None = current[0] if current else None
        if claim is None and take_new:
            if reached(state) is not None:  # checked before a reply is taken: never one step over
                _set_aside_over_limit(config, state, emit)
                break
            claim = _claim_next(config, state, emit)
            state = replace(state, held=None)  # an answer belongs to its own reply only
        if claim is False:
            return state, applied, True
        if not isinstance(claim, Path):
            break
        try:
            state = await _apply_reply(config, state, pipeline, claim, emit, store)
        except Exception as exc:  # whatever failed, the reply must not block every later step
            saved = load_session(config.sessions_dir, state.session_id)
            if saved.sequence_number != state.sequence_number:  # committed: only the archive move failed
                state = saved
                with contextlib.suppress(OSError):  # else the next step archives it (an older claim)
                    _archive(config, claim)
                continue
            _reject_claim(config, state, claim, exc, emit)
            continue
        applied += waiting_for_answer(state, store) is None
    return state, applied, False


async def step(config: RelayConfig, session_id: str | None = None,
               on_event: EventSink | None = None) -> StepReport:
    """Apply every pending reply to the session (default: the active one) and write the
    next outbox after each; return what happened. Stops at a command held for approval
    (``report.session.held``). Raises :class:`RelayError` only for problems of the root
    itself (no session, damaged session file, lock held)."""
    return await _locked(config, session_id, on_event)


async def answer_held(config: RelayConfig, held_id: str, approved: bool, note: str | None = None,
                      session_id: str | None = None, on_event: EventSink | None = None) -> StepReport:
    """Answer the held command ``held_id`` (``{sequence}-{n}`` as the outbox names it, or the id
    of its entry in the approvals store) through the store, then finish the reply it belongs
    to. :class:`RelayError` when nothing waits under that id, or when it was answered already
    (saying who answered, and when)."""
    store = approvals_store()
    session_id, pending = _pending_of(config, store, held_id, session_id)
    verdict = "approve" if approved else "deny"
    decided = store.decide(pending, verdict, f"{_user()} (codeloop relay {verdict})", note or "")
    if isinstance(decided, AlreadyDecided):
        if decided.verdict in ("running", "ran", "interrupted"):  # what was decided: it was approved
            decided = replace(decided, verdict="approved")
        raise RelayError(decided.describe(pending))
    return await _locked(config, session_id, on_event, take_new=False)


HELD_ID = re.compile(r"[0-9]+-[0-9]+")
"""The form of a held command's id in the outbox (``{sequence}-{n}``)."""


def _pending_of(config: RelayConfig, store: PendingStore, held_id: str, session_id: str | None) -> tuple[str, str]:
    """The session and the store entry ``held_id`` names; :class:`RelayError` when none waits."""
    if HELD_ID.fullmatch(held_id):
        state = find_session(config, session_id)
        held = state.held
        if held is None or held.id != held_id:
            waiting = f"the command waiting is {held.id}" if held else "no command is waiting for approval"
            raise RelayError(f"session {state.session_id}: nothing waits under {held_id!r} ({waiting}); "
                             f"see codeloop relay status --root {config.root}")
        return state.session_id, held.pending
    try:
        entry = store.get(held_id)
    except UnknownPendingCallError as exc:
        raise RelayError(str(exc)) from None
    if entry.face != "relay" or (session_id is not None and entry.session != session_id):
        raise RelayError(f"pending call {held_id} belongs to codeloop {entry.face} session {entry.session}, not "
                         f"to {'relay session ' + session_id if session_id else 'a relay session'}; answer it with "
                         f"codeloop approvals approve|deny {held_id}")
    find_session(config, entry.session)  # a session of this root: else nothing would run it
    return entry.session, entry.id


def _user() -> str:
    """Who answers from this shell, as the store records it."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.getuid())
    return f"{user}@{socket.gethostname()}"


def rewind_session(config: RelayConfig, session_id: str | None, to: int, *, dry_run: bool = False,
                   force: bool = False) -> tuple[SessionState, RewindResult]:
    """Put the session's workspace back as it was before the first reply after ``to`` (its
    sequence number; 0: before every reply) changed it. The session's own state (its
    sequence, the outboxes) stays: the files go back, the conversation does not."""
    return _on_files(config, session_id, lambda key, workspace: rewind_run(
        key, workspace, after=to, dry_run=dry_run, force=force))


def redo_session(config: RelayConfig, session_id: str | None, *, dry_run: bool = False,
                 force: bool = False) -> tuple[SessionState, RewindResult]:
    """Take back the session's last :func:`rewind_session`: the files its replies had changed
    come back. Refused when a later reply changed files, or (unless ``force``) files changed since."""
    return _on_files(config, session_id, lambda key, workspace: redo_run(
        key, workspace, dry_run=dry_run, force=force))


def _on_files(config: RelayConfig, session_id: str | None,
              act: Callable[[str, str], RewindResult]) -> tuple[SessionState, RewindResult]:
    """Run ``act`` (a rewind or a redo of the session's snapshots) under the root's lock."""
    find_session(config, session_id)
    config.ensure_dirs()
    with _root_lock(config):
        state = find_session(config, session_id)
        _require_workspace(state)
        try:
            result = act(f"relay-{state.session_id}", state.workspace)
        except RewindRefusedError as exc:
            raise RelayError(str(exc)) from None
    return state, result


@contextlib.contextmanager
def _open_session(config: RelayConfig, session_id: str | None, if_complete: str) -> Iterator[SessionState]:
    """The session, read again under the root's lock; :class:`RelayError` when it is complete."""
    find_session(config, session_id)  # fail before creating anything under a wrong --root
    config.ensure_dirs()
    with _root_lock(config):
        state = find_session(config, session_id)
        if state.is_complete:
            raise RelayError(f"session {state.session_id} is complete ({state.summary or 'no summary'}); "
                             f"{if_complete}")
        yield state


async def _locked(config: RelayConfig, session_id: str | None, on_event: EventSink | None, *,
                  take_new: bool = True) -> StepReport:
    events: list[RelayEvent] = []

    def emit(event: RelayEvent) -> None:
        events.append(event)
        if on_event is not None:
            on_event(event)

    new_one = f'start a new one with codeloop relay new "TASK" --root {config.root}'
    with _open_session(config, session_id, new_one) as state:
        try:
            state, applied, blocked = await _step_locked(config, state, emit, take_new=take_new)
        except (WorkspaceError, OSError) as exc:
            raise RelayError(f"the step stopped: {exc}; fix the cause and run it again "
                             "(nothing is lost)") from None
    return StepReport(state, applied, events, blocked)


async def resume(config: RelayConfig, session_id: str | None = None,
                 on_event: EventSink | None = None) -> tuple[SessionState, Path]:
    """Make a session the active one and re-offer its newest outbox.

    Finishes a step that was interrupted (its reply is in ``inbox/processing``) without
    taking new inbox files; rewrites the outbox from the session file (keeping its
    results and READ_FILE requests) only when it is missing. Never changes the sequence.
    """
    with _open_session(config, session_id, "nothing to resume") as state:
        state, _, _ = await _step_locked(config, state, on_event or (lambda _e: None), take_new=False)
        path = outbox_path(config, state)
        if waiting_for_answer(state) is not None:  # the outbox saying what waits
            path = config.outbox_dir / state.outbox_name(state.sequence_number + 1)
        if not path.is_file():
            path = await write_outbox(config, state, open_workspace(Path(state.workspace), config, state.policy))
        if not state.is_complete:
            state = replace(state, updated_at=utc_now())
            save_session(config.sessions_dir, state)
    return state, path


async def set_limits(config: RelayConfig, session_id: str | None, *, max_steps: int | None = None,
                     max_time_s: float | None = None) -> tuple[SessionState, Path]:
    """Set the session's step and time limits (those given; the others stay) and write its
    newest outbox again, so it says whether a limit is reached; return the session and that
    outbox. The command time used so far is kept."""
    with _open_session(config, session_id, "its limits no longer matter") as state:
        limits = state.limits
        if max_steps is not None:
            limits = replace(limits, max_steps=max_steps)
        if max_time_s is not None:
            limits = replace(limits, max_time_s=max_time_s)
        state = replace(state, limits=limits, updated_at=utc_now())
        if waiting_for_answer(state) is not None:  # the waiting outbox stays as it is
            path = config.outbox_dir / state.outbox_name(state.sequence_number + 1)
        else:
            _require_workspace(state)
            path = await write_outbox(config, state, open_workspace(Path(state.workspace), config, state.policy))
        save_session(config.sessions_dir, state)
    return state, path
