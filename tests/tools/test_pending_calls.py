"""The pipeline's asks go to the pending store and run once, whoever answers (issue 34)."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from codeloop.environments.local import LocalExecutionEnvironment
from codeloop.llm.types import ToolDefinition
from codeloop.policy.approval import ToolCallRequest
from codeloop.policy.model import Decision
from codeloop.policy.pending import (
    AlreadyDecided,
    PendingCall,
    PendingStore,
    SqlitePendingStore,
    UnknownPendingCallError,
)
from codeloop.tools.call_path import Pipeline, PipelineCall, build_pipeline
from codeloop.tools.registry import RegisteredTool, ToolContext, ToolRegistry
from codeloop.tools.tool_events import ToolCallDecided, ToolCallPending, ToolEvent

SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


class Counter:
    """A tool that appends a line to ``ran.txt`` in the workspace each time it runs."""

    def __init__(self, root: Path) -> None:
        self.file = root / "ran.txt"
        self.tool = RegisteredTool(ToolDefinition("mark", "d", SCHEMA), self.run)

    async def run(self, args: dict[str, Any], env: Any, ctx: ToolContext) -> str:
        with self.file.open("a") as f:
            f.write(args["name"] + "\n")
        return f"marked {args['name']}"

    @property
    def runs(self) -> list[str]:
        return self.file.read_text().split() if self.file.exists() else []


async def ask(call: ToolCallRequest, env: Any) -> Decision:
    return Decision.ask("marks a file", "test.rule", ("mark",))


@pytest.fixture
def store(tmp_path: Path) -> SqlitePendingStore:
    return SqlitePendingStore(tmp_path / "approvals.sqlite3")


def pipeline_of(counter: Counter, store: PendingStore, tmp_path: Path, events: list[ToolEvent] | None = None,
                **kw: Any) -> Pipeline:
    return build_pipeline(ToolRegistry.of([counter.tool]), LocalExecutionEnvironment(tmp_path), policy=ask,
                          pending=store, session="s1", face="run", events=None if events is None else events.append,
                          poll_interval=0.01, **kw)


def answer_later(path: Path, verdict: str, who: str, reason: str = "", scope: str = "once") -> threading.Thread:
    """Answers the only pending call of the store at ``path`` from another thread (its own
    store object and connections), once there is one."""

    def run() -> None:
        other = SqlitePendingStore(path)
        while not other.list():
            threading.Event().wait(0.01)
        other.decide(other.list()[0].id, verdict, who, reason, scope)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


async def test_a_waiting_call_runs_once_after_an_answer_given_elsewhere(store: SqlitePendingStore,
                                                                        tmp_path: Path) -> None:
    counter, events = Counter(tmp_path), []
    pipeline = pipeline_of(counter, store, tmp_path, events, wait_for_answer=True)
    thread = answer_later(store.path, "approve", "alice", "fine")
    result = await pipeline.run(PipelineCall("mark", {"name": "a"}, "c1", step=4))
    thread.join()
    assert (result.is_error, result.output, counter.runs) == (False, "marked a", ["a"])
    pending = [e for e in events if isinstance(e, ToolCallPending)]
    decided = [e for e in events if isinstance(e, ToolCallDecided)]
    assert len(pending) == 1 and (pending[0].entry.step, pending[0].entry.face, pending[0].call_id) == (4, "run", "c1")
    assert [(e.entry.status, e.entry.decided_by, e.entry.decision_reason) for e in decided] == [
        ("approved", "alice", "fine")]
    assert store.get(pending[0].entry.id).status == "ran"


async def test_a_denial_given_elsewhere_is_the_calls_error_with_who_and_why(store: SqlitePendingStore,
                                                                            tmp_path: Path) -> None:
    counter = Counter(tmp_path)
    thread = answer_later(store.path, "deny", "bob", "not today")
    result = await pipeline_of(counter, store, tmp_path, wait_for_answer=True).run(PipelineCall("mark", {"name": "a"}))
    thread.join()
    assert result.is_error and counter.runs == []
    assert result.output == "Tool call 'mark' was not approved (marks a file): denied by bob: not today."


async def test_the_client_answers_through_the_store(store: SqlitePendingStore, tmp_path: Path) -> None:
    counter, told = Counter(tmp_path), []

    async def client(entry: PendingCall, answers: PendingStore) -> None:
        told.append(entry.id)
        answers.decide(entry.id, "approve", "terminal")

    result = await pipeline_of(counter, store, tmp_path, wait_for_answer=True, ask_client=client).run(
        PipelineCall("mark", {"name": "a"}))
    assert not result.is_error and counter.runs == ["a"]
    assert store.get(told[0]).decided_by == "terminal"


async def test_an_answer_from_elsewhere_wins_over_the_prompt_which_is_withdrawn(store: SqlitePendingStore,
                                                                                 tmp_path: Path) -> None:
    counter, prompt = Counter(tmp_path), {"cancelled": False}

    async def client(entry: PendingCall, answers: PendingStore) -> None:
        try:
            await asyncio.Event().wait()  # nobody types at the terminal
        except asyncio.CancelledError:
            prompt["cancelled"] = True
            raise

    thread = answer_later(store.path, "approve", "alice")
    result = await pipeline_of(counter, store, tmp_path, wait_for_answer=True, ask_client=client).run(
        PipelineCall("mark", {"name": "a"}))
    thread.join()
    assert not result.is_error and counter.runs == ["a"] and prompt["cancelled"]


async def test_a_broken_prompt_denies_the_call(store: SqlitePendingStore, tmp_path: Path) -> None:
    counter = Counter(tmp_path)

    async def client(entry: PendingCall, answers: PendingStore) -> None:
        raise RuntimeError("no tty")

    result = await pipeline_of(counter, store, tmp_path, wait_for_answer=True, ask_client=client).run(
        PipelineCall("mark", {"name": "a"}))
    assert result.is_error and "asking for approval failed (no tty)" in result.output and counter.runs == []


async def test_always_stores_what_the_entry_may_remember_and_once_does_not(store: SqlitePendingStore,
                                                                           tmp_path: Path) -> None:
    counter, remembered = Counter(tmp_path), []
    pipeline = pipeline_of(counter, store, tmp_path, wait_for_answer=True, remember=remembered.append)
    for scope in ("once", "always"):
        thread = answer_later(store.path, "approve", "alice", scope=scope)
        assert not (await pipeline.run(PipelineCall("mark", {"name": scope}))).is_error
        thread.join()
    assert [e.remember_as for e in remembered] == [("mark",)] and counter.runs == ["once", "always"]


async def test_two_resumes_at_once_run_the_call_once(store: SqlitePendingStore, tmp_path: Path) -> None:
    """Two owners (two pipelines, two store objects) resume the same approved call at once."""
    counter = Counter(tmp_path)
    first = pipeline_of(counter, store, tmp_path)
    second = pipeline_of(counter, SqlitePendingStore(store.path), tmp_path)
    held = await first.run(PipelineCall("mark", {"name": "a"}))
    assert held.pending is not None and "waits as pending call" in held.output and counter.runs == []
    still = await first.resume(held.pending.id)
    assert still.is_error and "still waits for an answer" in still.output and still.pending is not None
    store.decide(held.pending.id, "approve", "alice")
    results = await asyncio.gather(first.resume(held.pending.id), second.resume(held.pending.id))
    assert counter.runs == ["a"]
    assert sorted(r.is_error for r in results) == [False, True]
    loser = next(r for r in results if r.is_error)
    assert "not run again here" in loser.output
    again = await first.resume(held.pending.id)
    assert again.is_error and "it already ran" in again.output and counter.runs == ["a"]


async def test_a_call_claimed_when_the_process_died_is_reported_interrupted_never_run(
        store: SqlitePendingStore, tmp_path: Path) -> None:
    counter = Counter(tmp_path)
    pipeline = pipeline_of(counter, store, tmp_path)
    held = await pipeline.run(PipelineCall("mark", {"name": "a"}))
    assert held.pending is not None
    store.decide(held.pending.id, "approve", "alice")
    assert store.claim(held.pending.id)  # the owner claimed it, then was killed before it finished
    assert [e.id for e in store.interrupt("s1")] == [held.pending.id]
    result = await pipeline.resume(held.pending.id)
    assert result.is_error and "interrupted" in result.output and counter.runs == []


async def test_cancelling_a_waiting_call_withdraws_it(store: SqlitePendingStore, tmp_path: Path) -> None:
    counter, events = Counter(tmp_path), []
    task = asyncio.ensure_future(pipeline_of(counter, store, tmp_path, events, wait_for_answer=True).run(
        PipelineCall("mark", {"name": "a"})))
    while not store.list():
        await asyncio.sleep(0.01)
    entry = store.list()[0]
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    late = store.decide(entry.id, "approve", "alice")
    assert isinstance(late, AlreadyDecided) and late.verdict == "withdrawn" and counter.runs == []
    assert [e.entry.status for e in events if isinstance(e, ToolCallDecided)] == ["withdrawn"]


async def test_resuming_an_unknown_id_says_so(store: SqlitePendingStore, tmp_path: Path) -> None:
    with pytest.raises(UnknownPendingCallError, match="no pending call 'nope'"):
        await pipeline_of(Counter(tmp_path), store, tmp_path).resume("nope")
