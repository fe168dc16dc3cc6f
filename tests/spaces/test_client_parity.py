"""Both clients offer every call of the API: the async one against a real server process."""

from __future__ import annotations

import inspect
from collections.abc import Iterator

import pytest

from codeloop.spaces.client import AsyncSpacesClient, SpacesAPIError, SpacesClient

from .server_process import ServerProcess


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    srv = ServerProcess(tmp_path_factory.mktemp("parity-data")).start()
    yield srv
    srv.stop()


def _calls(cls: type) -> dict[str, inspect.Signature]:
    return {name: inspect.signature(member) for name, member in vars(cls).items()
            if callable(member) and not name.startswith("_")}


def test_the_clients_have_the_same_calls_with_the_same_parameters() -> None:
    sync_calls, async_calls = _calls(SpacesClient), _calls(AsyncSpacesClient)
    assert set(sync_calls) == set(async_calls) >= {"create_space", "list_spaces", "delete_space", "run", "resume",
                                                   "cancel", "get_run", "read_file", "write_file", "stream_events"}
    for name, signature in sync_calls.items():
        assert list(signature.parameters) == list(async_calls[name].parameters), name
    assert SpacesClient.write_file.__doc__ == AsyncSpacesClient.write_file.__doc__ == "Write a file; returns bytes written."


async def test_async_client_files_listing_and_cancel(server: ServerProcess) -> None:
    async with AsyncSpacesClient(server.url, server.create_key()) as client:
        space = await client.create_space(name="parity", policy={"preset": "standard"})
        assert await client.write_file(space.id, "d/a b.txt", b"abc") == 3
        assert await client.read_file(space.id, "d/a b.txt") == b"abc"
        assert [s.name for s in await client.list_spaces()] == ["parity"]
        paused = await client.run(space.id, [{"type": "shell", "id": "rm", "command": "rm -rf d"}])
        assert paused.status == "awaiting_approval"
        cancelled = await client.cancel(paused.runId)
        assert (cancelled.runId, cancelled.state) == (paused.runId, "cancelled")
        assert await client.read_file(space.id, "d/a b.txt") == b"abc"
        await client.delete_space(space.id)
        with pytest.raises(SpacesAPIError) as err:
            await client.read_file(space.id, "d/a b.txt")
        assert err.value.status == 404


def test_help_shows_each_call_with_its_own_parameters() -> None:
    with SpacesClient("http://127.0.0.1:9") as client:
        bound = inspect.signature(client.create_space)
    assert list(bound.parameters) == ["name", "policy", "ttl_seconds"]
    assert str(bound.return_annotation) == "Space"
    assert list(inspect.signature(AsyncSpacesClient.resume).parameters) == [
        "self", "run_id", "operation_id", "decision", "reason"]
    assert inspect.iscoroutinefunction(AsyncSpacesClient.get_run)
    assert AsyncSpacesClient.get_run.__name__ == "get_run"
