"""Python client of the spaces HTTP API, synchronous and asynchronous (httpx).

::

    with SpacesClient("http://127.0.0.1:8787", api_key="cls_...") as client:
        space = client.create_space(policy={"preset": "standard"})
        result = client.run(space.id, [{"type": "shell", "id": "t", "command": "pytest -q"}])
        if result.status == "awaiting_approval":
            result = client.resume(result.runId, "t", "approved")

``AsyncSpacesClient`` has the same methods as coroutines plus ``stream_events``. Both build
each request with the same :class:`_Calls` table, so the two clients cannot drift apart.
Errors of the API raise :class:`SpacesAPIError` with its status, code and message.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import quote

import httpx
from pydantic import BaseModel, ConfigDict

from codeloop.spaces.operations import EventsMessage


class Space(BaseModel):
    """A space as the API returns it."""

    model_config = ConfigDict(extra="ignore")
    id: str
    name: str
    policy: dict[str, Any]
    createdAt: float
    expiresAt: float
    networkEnforcement: str | None = None


class RunView(BaseModel):
    """A run with all its events (``GET /v1/runs/{id}``)."""

    model_config = ConfigDict(extra="ignore")
    runId: str
    spaceId: str
    state: str
    status: str
    pendingOperationId: str | None = None
    events: list[dict[str, Any]]


class SpacesAPIError(Exception):
    """The API answered with an error."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message


@dataclass(frozen=True)
class _Call:
    method: str
    path: str
    json: Any = None
    content: bytes | None = None


class _Calls:
    """Every request of the API, built once for both clients."""

    @staticmethod
    def create_space(name: str, policy: dict[str, Any] | None, ttl_seconds: int | None) -> _Call:
        body: dict[str, Any] = {"name": name, "policy": policy or {}}
        if ttl_seconds is not None:
            body["ttlSeconds"] = ttl_seconds
        return _Call("POST", "/v1/spaces", body)

    @staticmethod
    def run(space_id: str, operations: list[dict[str, Any]]) -> _Call:
        return _Call("POST", f"/v1/spaces/{space_id}/runs", {"protocolVersion": "1.0", "operations": operations})

    @staticmethod
    def resume(run_id: str, operation_id: str, decision: str, reason: str | None) -> _Call:
        approval: dict[str, Any] = {"operationId": operation_id, "decision": decision}
        if reason is not None:
            approval["reason"] = reason
        return _Call("POST", f"/v1/runs/{run_id}/resume", {"approval": approval})

    @staticmethod
    def file(space_id: str, path: str) -> str:
        return f"/v1/spaces/{space_id}/files/{quote(path)}"


def _raise_for(response: httpx.Response) -> None:
    if response.status_code < 400:
        return
    try:
        err = response.json()["error"]
        code, message = str(err["code"]), str(err["message"])
    except (ValueError, KeyError, TypeError):
        code, message = "http_error", response.text[:500]
    raise SpacesAPIError(response.status_code, code, message)


def _headers(api_key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


class _SSEDecoder:
    """Turns SSE lines into events; ``{"event": "end", ...}`` for the closing one."""

    def __init__(self) -> None:
        self._block: list[str] = []

    def feed(self, line: str) -> dict[str, Any] | None:
        """Take one line; return the event a blank line completes, else ``None``."""
        if line:
            self._block.append(line)
            return None
        block, self._block = self._block, []
        event, data = "", []
        for item in block:
            if item.startswith("event:"):
                event = item[6:].strip()
            elif item.startswith("data:"):
                data.append(item[5:].strip())
        if not data:
            return None
        payload: dict[str, Any] = json.loads("\n".join(data))
        return {"event": "end", **payload} if event == "end" else payload


class SpacesClient:
    """Synchronous client; use as a context manager or call :meth:`close`."""

    def __init__(self, base_url: str, api_key: str | None = None, *, timeout: float = 120.0,
                 transport: httpx.BaseTransport | None = None) -> None:
        self._http = httpx.Client(base_url=base_url, headers=_headers(api_key), timeout=timeout, transport=transport)

    def __enter__(self) -> SpacesClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close connections."""
        self._http.close()

    def _send(self, call: _Call) -> httpx.Response:
        response = self._http.request(call.method, call.path, json=call.json, content=call.content)
        _raise_for(response)
        return response

    def create_space(self, name: str = "space", policy: dict[str, Any] | None = None,
                     ttl_seconds: int | None = None) -> Space:
        """Create a space (policy: ``{"preset": ..., "shell": {...}, ...}``)."""
        return Space.model_validate(self._send(_Calls.create_space(name, policy, ttl_seconds)).json())

    def list_spaces(self) -> list[Space]:
        """The key's spaces."""
        return [Space.model_validate(s) for s in self._send(_Call("GET", "/v1/spaces")).json()["spaces"]]

    def delete_space(self, space_id: str) -> None:
        """Delete a space and its workspace."""
        self._send(_Call("DELETE", f"/v1/spaces/{space_id}"))

    def run(self, space_id: str, operations: list[dict[str, Any]]) -> EventsMessage:
        """Execute operations; returns when the run completes or pauses for approval."""
        return EventsMessage.model_validate(self._send(_Calls.run(space_id, operations)).json())

    def resume(self, run_id: str, operation_id: str, decision: Literal["approved", "denied"],
               reason: str | None = None) -> EventsMessage:
        """Approve or deny the paused operation; returns the events that followed."""
        return EventsMessage.model_validate(self._send(_Calls.resume(run_id, operation_id, decision, reason)).json())

    def cancel(self, run_id: str) -> RunView:
        """Cancel a run."""
        return RunView.model_validate(self._send(_Call("POST", f"/v1/runs/{run_id}/cancel")).json())

    def get_run(self, run_id: str) -> RunView:
        """A run with all its events."""
        return RunView.model_validate(self._send(_Call("GET", f"/v1/runs/{run_id}")).json())

    def read_file(self, space_id: str, path: str) -> bytes:
        """A file's bytes."""
        return self._send(_Call("GET", _Calls.file(space_id, path))).content

    def write_file(self, space_id: str, path: str, data: bytes) -> int:
        """Write a file; returns bytes written."""
        return int(self._send(_Call("PUT", _Calls.file(space_id, path), content=data)).json()["bytesWritten"])

    def stream_events(self, run_id: str, after: int = 0) -> Iterator[dict[str, Any]]:
        """Events of a run as they happen; the last item is ``{"event": "end", "state": ...}``."""
        headers = {"Last-Event-ID": str(after)} if after else {}
        with self._http.stream("GET", f"/v1/runs/{run_id}/events", headers=headers) as response:
            _raise_for(response)
            decoder = _SSEDecoder()
            for line in response.iter_lines():
                item = decoder.feed(line)
                if item is not None:
                    yield item


class AsyncSpacesClient:
    """Asynchronous client with the methods of :class:`SpacesClient` as coroutines."""

    def __init__(self, base_url: str, api_key: str | None = None, *, timeout: float = 120.0,
                 transport: httpx.AsyncBaseTransport | None = None,
                 limits: httpx.Limits | None = None) -> None:
        self._http = httpx.AsyncClient(base_url=base_url, headers=_headers(api_key), timeout=timeout,
                                       transport=transport, limits=limits or httpx.Limits())

    async def __aenter__(self) -> AsyncSpacesClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close connections."""
        await self._http.aclose()

    async def _send(self, call: _Call) -> httpx.Response:
        response = await self._http.request(call.method, call.path, json=call.json, content=call.content)
        _raise_for(response)
        return response

    async def create_space(self, name: str = "space", policy: dict[str, Any] | None = None,
                           ttl_seconds: int | None = None) -> Space:
        """Create a space."""
        return Space.model_validate((await self._send(_Calls.create_space(name, policy, ttl_seconds))).json())

    async def delete_space(self, space_id: str) -> None:
        """Delete a space and its workspace."""
        await self._send(_Call("DELETE", f"/v1/spaces/{space_id}"))

    async def run(self, space_id: str, operations: list[dict[str, Any]]) -> EventsMessage:
        """Execute operations."""
        return EventsMessage.model_validate((await self._send(_Calls.run(space_id, operations))).json())

    async def resume(self, run_id: str, operation_id: str, decision: Literal["approved", "denied"],
                     reason: str | None = None) -> EventsMessage:
        """Approve or deny the paused operation."""
        call = _Calls.resume(run_id, operation_id, decision, reason)
        return EventsMessage.model_validate((await self._send(call)).json())

    async def get_run(self, run_id: str) -> RunView:
        """A run with all its events."""
        return RunView.model_validate((await self._send(_Call("GET", f"/v1/runs/{run_id}"))).json())

    async def stream_events(self, run_id: str, after: int = 0) -> AsyncIterator[dict[str, Any]]:
        """Events of a run as they happen; the last item is ``{"event": "end", "state": ...}``."""
        headers = {"Last-Event-ID": str(after)} if after else {}
        async with self._http.stream("GET", f"/v1/runs/{run_id}/events", headers=headers) as response:
            _raise_for(response)
            decoder = _SSEDecoder()
            async for line in response.aiter_lines():
                item = decoder.feed(line)
                if item is not None:
                    yield item
