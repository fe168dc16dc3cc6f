"""The Python client (sync and async) against a real server process."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codeloop.spaces.client import AsyncSpacesClient, SpacesAPIError, SpacesClient, _SSEDecoder

from .server_process import ServerProcess


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    srv = ServerProcess(tmp_path_factory.mktemp("client-data")).start()
    yield srv
    srv.stop()


def test_sync_client_round_trip_with_approval(server: ServerProcess) -> None:
    with SpacesClient(server.url, server.create_key()) as client:
        space = client.create_space(policy={"preset": "standard"})
        assert client.write_file(space.id, "a.txt", b"abc") == 3
        result = client.run(space.id, [{"type": "readFile", "path": "a.txt"},
                                       {"type": "shell", "id": "d", "command": "rm -rf a.txt"}])
        assert result.status == "awaiting_approval"
        assert result.events[0].content == "abc"  # type: ignore[union-attr]
        done = client.resume(result.runId, "d", "approved")
        assert done.status == "completed" and done.events[0].success  # type: ignore[union-attr]
        streamed = list(client.stream_events(result.runId))
        assert [e.get("type", e.get("event")) for e in streamed] == ["readFile", "approvalRequired", "shell", "end"]
        assert client.get_run(result.runId).state == "completed"
        client.delete_space(space.id)
        assert space.id not in [s.id for s in client.list_spaces()]


def test_sync_client_raises_api_errors(server: ServerProcess) -> None:
    with SpacesClient(server.url, "wrong") as client, pytest.raises(SpacesAPIError) as err:
        client.list_spaces()
    assert (err.value.status, err.value.code) == (401, "unauthorized")


async def test_async_client_round_trip_and_stream(server: ServerProcess) -> None:
    async with AsyncSpacesClient(server.url, server.create_key()) as client:
        space = await client.create_space()
        result = await client.run(space.id, [{"type": "shell", "command": "echo hi"}])
        assert result.events[0].stdout == "hi\n"  # type: ignore[union-attr]
        items = [e async for e in client.stream_events(result.runId)]
        assert items[-1] == {"event": "end", "runId": result.runId, "state": "completed"}
        await client.delete_space(space.id)


event_dicts = st.dictionaries(st.sampled_from(["type", "stdout", "operationId", "n"]),
                              st.text(max_size=10) | st.integers(), max_size=4)


@given(st.lists(event_dicts, max_size=5))
def test_sse_decoder_returns_what_the_server_encodes(events: list[dict[str, object]]) -> None:
    decoder = _SSEDecoder()
    text = "".join(f"id: {i}\nevent: x\ndata: {json.dumps(e)}\n\n" for i, e in enumerate(events, 1))
    text += 'event: end\ndata: {"state": "completed"}\n\n'
    out = [item for line in text.split("\n") if (item := decoder.feed(line)) is not None]
    assert out == [*events, {"event": "end", "state": "completed"}]
