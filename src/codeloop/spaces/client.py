"""Python client of the spaces HTTP API, synchronous and asynchronous (httpx).

::

    with SpacesClient("http://127.0.0.1:8787", api_key="cls_...") as client:
        space = client.create_space(policy={"preset": "standard"})
        result = client.run(space.id, [{"type": "shell", "id": "t", "command": "pytest -q"}])
        if result.status == "awaiting_approval":
            result = client.resume(result.runId, "t", "approved")

``AsyncSpacesClient`` has the same methods as coroutines. Each request is written once
(:class:`_Api`) and becomes a method of both clients, so the two cannot drift apart.
Errors of the API raise :class:`SpacesAPIError` with its status, code and message.
"""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any, Concatenate, Generic, Literal, ParamSpec, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel, ConfigDict

from codeloop.spaces.operations import EventsMessage

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)
P = ParamSpec("P")


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
class _Call(Generic[T]):
    """One request of the API and how its answer is read."""

    method: str
    path: str
    parse: Callable[[httpx.Response], T]
    json: Any = None
    content: bytes | None = None


def _as(model: type[M]) -> Callable[[httpx.Response], M]:
    return lambda response: model.model_validate(response.json())


class _Api:
    """Every request of the API, written once: both clients turn each into a method."""

    @staticmethod
    def create_space(name: str = "space", policy: dict[str, Any] | None = None,
                     ttl_seconds: int | None = None) -> _Call[Space]:
        """Create a space (policy: ``{"preset": ..., "shell": {...}, ...}``)."""
        body: dict[str, Any] = {"name": name, "policy": policy or {}}
        if ttl_seconds is not None:
            body["ttlSeconds"] = ttl_seconds
        return _Call("POST", "/v1/spaces", _as(Space), body)

    @staticmethod
    def list_spaces() -> _Call[list[Space]]:
        """The key's spaces."""
        return _Call("GET", "/v1/spaces", lambda r: [Space.model_validate(s) for s in r.json()["spaces"]])

    @staticmethod
    def update_space(space_id: str, name: str | None = None, policy: dict[str, Any] | None = None) -> _Call[Space]:
        """Rename a space or replace its policy (e.g. to raise its ``limits``)."""
        body = {key: value for key, value in {"name": name, "policy": policy}.items() if value is not None}
        return _Call("PATCH", f"/v1/spaces/{space_id}", _as(Space), body)

    @staticmethod
    def delete_space(space_id: str) -> _Call[None]:
        """Delete a space and its workspace."""
        return _Call("DELETE", f"/v1/spaces/{space_id}", lambda r: None)

    @staticmethod
    def run(space_id: str, operations: list[dict[str, Any]]) -> _Call[EventsMessage]:
        """Execute operations; returns when the run completes or pauses for approval."""
        body = {"protocolVersion": "1.0", "operations": operations}
        return _Call("POST", f"/v1/spaces/{space_id}/runs", _as(EventsMessage), body)

    @staticmethod
    def resume(run_id: str, operation_id: str, decision: Literal["approved", "denied"],
               reason: str | None = None) -> _Call[EventsMessage]:
        """Approve or deny the paused operation; returns the events that followed."""
        approval: dict[str, Any] = {"operationId": operation_id, "decision": decision}
        if reason is not None:
            approval["reason"] = reason
        return _Call("POST", f"/v1/runs/{run_id}/resume", _as(EventsMessage), {"approval": approval})

    @staticmethod
    def continue_run(run_id: str) -> _Call[EventsMessage]:
        """Go on with a run stopped by the space's limits (state ``limit_reached``) once they
        are raised; returns the events that followed."""
        return _Call("POST", f"/v1/runs/{run_id}/resume", _as(EventsMessage), {})

    @staticmethod
    def cancel(run_id: str) -> _Call[RunView]:
        """Cancel a run."""
        return _Call("POST", f"/v1/runs/{run_id}/cancel", _as(RunView))

    @staticmethod
    def get_run(run_id: str) -> _Call[RunView]:
        """A run with all its events."""
        return _Call("GET", f"/v1/runs/{run_id}", _as(RunView))

    @staticmethod
    def read_file(space_id: str, path: str) -> _Call[bytes]:
        """A file's bytes."""
        return _Call("GET", f"/v1/spaces/{space_id}/files/{quote(path)}", lambda r: r.content)

    @staticmethod
    def write_file(space_id: str, path: str, data: bytes) -> _Call[int]:
        """Write a file; returns bytes written."""
        return _Call("PUT", f"/v1/spaces/{space_id}/files/{quote(path)}", lambda r: int(r.json()["bytesWritten"]),
                     content=data)


def _method(method: Callable[..., Any], build: Callable[..., Any]) -> None:
    """Give ``method`` the name, doc and parameters of ``build`` (after ``self``), for help()."""
    functools.update_wrapper(method, build)
    signature = inspect.signature(build)
    returns = str(signature.return_annotation).removeprefix("_Call[").removesuffix("]")
    self = inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)
    parameters = [self, *signature.parameters.values()]
    vars(method)["__signature__"] = signature.replace(parameters=parameters, return_annotation=returns)


def _sync(build: Callable[P, _Call[T]]) -> Callable[Concatenate[SpacesClient, P], T]:
    def method(self: SpacesClient, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return self._send(build(*args, **kwargs))

    _method(method, build)
    return method


def _async(build: Callable[P, _Call[T]]) -> Callable[Concatenate[AsyncSpacesClient, P], Awaitable[T]]:
    async def method(self: AsyncSpacesClient, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return await self._send(build(*args, **kwargs))

    _method(method, build)
    return method


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

    def _send(self, call: _Call[T]) -> T:
        response = self._http.request(call.method, call.path, json=call.json, content=call.content)
        _raise_for(response)
        return call.parse(response)

    create_space = _sync(_Api.create_space)
    list_spaces = _sync(_Api.list_spaces)
    delete_space = _sync(_Api.delete_space)
    run = _sync(_Api.run)
    resume = _sync(_Api.resume)
    continue_run = _sync(_Api.continue_run)
    update_space = _sync(_Api.update_space)
    cancel = _sync(_Api.cancel)
    get_run = _sync(_Api.get_run)
    read_file = _sync(_Api.read_file)
    write_file = _sync(_Api.write_file)

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

    async def _send(self, call: _Call[T]) -> T:
        response = await self._http.request(call.method, call.path, json=call.json, content=call.content)
        _raise_for(response)
        return call.parse(response)

    create_space = _async(_Api.create_space)
    list_spaces = _async(_Api.list_spaces)
    delete_space = _async(_Api.delete_space)
    run = _async(_Api.run)
    resume = _async(_Api.resume)
    continue_run = _async(_Api.continue_run)
    update_space = _async(_Api.update_space)
    cancel = _async(_Api.cancel)
    get_run = _async(_Api.get_run)
    read_file = _async(_Api.read_file)
    write_file = _async(_Api.write_file)

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
