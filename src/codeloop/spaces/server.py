"""The spaces HTTP API (Starlette + uvicorn): routing, auth and JSON errors over :mod:`service`.

Endpoints: :data:`ROUTES` (served as ``/openapi.json``; docs/spaces.md describes each). All
are JSON except the file endpoints (raw bytes; GET of a directory lists it) and the events
stream (SSE: ``id: seq``, ``event: <type>``, ``data: <event>``, ending with ``event: end`` once
the run is not running). Errors are ``{"error": {"code", "message"}}``. A resume body is
``{"approval": {operationId, decision, reason?}}`` or the spec's
``{"type": "userMessage", "content": "approved"|"denied"}`` (answered through the run's pending
call, :mod:`codeloop.spaces.pending_calls`); an empty body goes on with a run stopped by the
space's limits once they are raised, or with one whose pending call was answered elsewhere.

Auth: ``Authorization: Bearer <key>``; a key sees only the spaces it created (others' are
404). ``--no-auth`` serves everything as owner ``local`` and is refused on a non-loopback host.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ipaddress
import json
import logging
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from codeloop.environments.errors import FileNotFoundInWorkspaceError, NotAFileError
from codeloop.policy import Decision
from codeloop.policy.input_limits import InputLimitError, loads_limited
from codeloop.spaces.console import LocalSessions, console_routes
from codeloop.spaces.database import RunRecord, SpaceRecord, SpacesStore, open_store
from codeloop.spaces.leases import DEFAULT_LEASE_S
from codeloop.spaces.operations import Approval, EventsMessage, OperationsMessage, path_problem
from codeloop.spaces.policy_config import PolicyConfigError
from codeloop.spaces.runs import MessageRejectedError
from codeloop.spaces.service import DEFAULT_TTL_S, MAX_TTL_S, ServiceError, SpacesService
from codeloop.spaces.workspace import UNSANDBOXED_WARNING
from codeloop.tools.call_path import PipelineCall
from codeloop.tools.registry import ToolCallOutcome
from codeloop.tools.space_tools import space_pipeline

log = logging.getLogger(__name__)
MAX_BODY_BYTES = 16 * 1024 * 1024
"""Largest request body: a 10 MB file as base64 plus the message around it."""
CLEANUP_INTERVAL_S = 60.0
KEEPALIVE_EVERY = 10
"""An SSE comment after this many idle half-seconds (a run waiting for a takeover sends nothing)."""


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CreateSpace(_Body):
    name: str = Field(default="space", max_length=200)
    policy: dict[str, Any] = Field(default_factory=dict)
    ttlSeconds: int = Field(default=DEFAULT_TTL_S, ge=60, le=MAX_TTL_S)


class PatchSpace(_Body):
    name: str | None = Field(default=None, max_length=200)
    policy: dict[str, Any] | None = None


class ExtendSpace(_Body):
    ttlSeconds: int = Field(ge=60, le=MAX_TTL_S)


class ResumeBody(_Body):
    approval: Approval


class UserMessageApproval(_Body):
    type: Literal["userMessage"]
    content: str = Field(max_length=1000)


USER_MESSAGE_DECISIONS: dict[str, Literal["approved", "denied"]] = {
    "approved": "approved", "approve": "approved", "yes": "approved",
    "denied": "denied", "deny": "denied", "no": "denied"}


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


def space_json(space: SpaceRecord, enforcement: str | None = None) -> dict[str, Any]:
    """The wire form of a space."""
    out: dict[str, Any] = {"id": space.id, "name": space.name, "policy": space.policy,
                           "createdAt": space.created_at, "expiresAt": space.expires_at}
    if enforcement:
        out["networkEnforcement"] = enforcement
    return out


def run_summary(run: RunRecord) -> dict[str, Any]:
    """The wire form of a run in a listing."""
    return {"runId": run.id, "spaceId": run.space_id, "state": run.state, "cursor": run.cursor,
            "pendingOperationId": run.pending_operation, "createdAt": run.created_at, "updatedAt": run.updated_at}


class SpacesAPI:
    """Request handlers bound to one service."""

    def __init__(self, service: SpacesService, *, auth: bool) -> None:
        self.service = service
        self.auth = auth
        self._known_keys: dict[str, str] = {}

    async def owner(self, request: Request) -> str:
        if not self.auth:
            return "local"
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise ServiceError(401, "unauthorized", "missing API key: send 'Authorization: Bearer <key>' "
                               "(create one with: codeloop spaces keys create)")
        owner = self._known_keys.get(token.strip())
        if owner is None:
            owner = await asyncio.to_thread(self.service.store.key_owner, token.strip())
            if owner is not None and len(self._known_keys) < 10_000:
                self._known_keys[token.strip()] = owner  # keys are never revoked, so a hit stays valid
        if owner is None:
            raise ServiceError(401, "unauthorized", "unknown API key")
        return owner

    async def space(self, request: Request) -> SpaceRecord:
        """The space of the path, when the caller's key owns it (else 404)."""
        return await self.service.space_for(await self.owner(request), request.path_params["space_id"])

    @staticmethod
    async def json_body(request: Request) -> Any:
        body = await request.body()
        if len(body) > MAX_BODY_BYTES:
            raise ServiceError(413, "body_too_large", f"request body over {MAX_BODY_BYTES} bytes")
        if not body:
            return {}
        try:
            return loads_limited(body, "request body")
        except InputLimitError as exc:
            raise ServiceError(400, "invalid_input", str(exc)) from None
        except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
            raise ServiceError(400, "invalid_json", f"request body is not valid JSON: {exc}") from None

    @staticmethod
    def model(cls: type[BaseModel], raw: Any) -> Any:
        try:
            return cls.model_validate(raw)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}" for e in exc.errors())
            raise ServiceError(400, "invalid_request", problems) from None

    # --- handlers
    async def health(self, request: Request) -> Response:
        return JSONResponse({"status": "ok", "store": self.service.store.kind, "auth": self.auth})

    async def openapi(self, request: Request) -> Response:
        return JSONResponse(openapi_document())

    async def create_space(self, request: Request) -> Response:
        owner = await self.owner(request)
        body = self.model(CreateSpace, await self.json_body(request))
        space = await self.service.create_space(owner, body.name, body.policy, body.ttlSeconds)
        _, env = await self.service.environment(space)
        return JSONResponse(space_json(space, env.network_enforcement), status_code=201)

    async def list_spaces(self, request: Request) -> Response:
        spaces = await asyncio.to_thread(self.service.store.list_spaces, await self.owner(request))
        return JSONResponse({"spaces": [space_json(s) for s in spaces]})

    async def get_space(self, request: Request) -> Response:
        space = await self.space(request)
        _, env = await self.service.environment(space)
        return JSONResponse(space_json(space, env.network_enforcement))

    async def patch_space(self, request: Request) -> Response:
        space = await self.space(request)
        body = self.model(PatchSpace, await self.json_body(request))
        return JSONResponse(space_json(await self.service.update_space(space, body.name, body.policy)))

    async def delete_space(self, request: Request) -> Response:
        await self.service.delete_space(await self.space(request))
        return Response(status_code=204)

    async def extend_space(self, request: Request) -> Response:
        space = await self.space(request)
        body = self.model(ExtendSpace, await self.json_body(request))
        return JSONResponse(space_json(await self.service.extend_space(space, body.ttlSeconds)))

    async def create_run(self, request: Request) -> Response:
        return JSONResponse(await self.service.start_run(await self.space(request), await self.json_body(request)))

    async def list_runs(self, request: Request) -> Response:
        runs = await asyncio.to_thread(self.service.store.list_runs, (await self.space(request)).id)
        return JSONResponse({"runs": [run_summary(r) for r in runs]})

    async def get_run(self, request: Request) -> Response:
        return JSONResponse(await self.service.run_view(await self.owner(request), request.path_params["run_id"]))

    async def resume_run(self, request: Request) -> Response:
        owner = await self.owner(request)
        raw = await self.json_body(request)
        run_id = request.path_params["run_id"]
        if raw == {}:  # no approval: go on with a run stopped by the space's limits (issue 36)
            return JSONResponse(await self.service.continue_run(owner, run_id))
        if isinstance(raw, dict) and raw.get("type") == "userMessage":
            # Spec §Approval Flow: a userMessage "approved"/"denied" answers the pending operation.
            msg = self.model(UserMessageApproval, raw)
            decision = USER_MESSAGE_DECISIONS.get(msg.content.strip().lower())
            if decision is None:
                raise ServiceError(400, "invalid_request", 'userMessage content must be "approved" or "denied"')
            run = await self.service.run_for(owner, run_id)
            approval = Approval(operationId=run.pending_operation or "", decision=decision)
        else:
            approval = self.model(ResumeBody, raw).approval
        return JSONResponse(await self.service.resume(owner, run_id, approval))

    async def rewind_run(self, request: Request, *, redo: bool = False) -> Response:
        owner = await self.owner(request)
        raw = await self.json_body(request)
        if not isinstance(raw, dict) or set(raw) - {"dryRun", "force"} or \
                not all(isinstance(v, bool) for v in raw.values()):
            raise ServiceError(400, "invalid_request", 'the body is {"dryRun": bool, "force": bool}, both optional')
        return JSONResponse(await self.service.rewind(owner, request.path_params["run_id"], redo=redo,
                                                      dry_run=raw.get("dryRun", False), force=raw.get("force", False)))

    async def redo_run(self, request: Request) -> Response:
        return await self.rewind_run(request, redo=True)

    async def cancel_run(self, request: Request) -> Response:
        return JSONResponse(await self.service.cancel(await self.owner(request), request.path_params["run_id"]))

    async def run_events(self, request: Request) -> Response:
        owner = await self.owner(request)
        run_id = request.path_params["run_id"]
        await self.service.run_for(owner, run_id)
        try:
            after = int(request.headers.get("last-event-id") or request.query_params.get("after") or 0)
        except ValueError:
            raise ServiceError(400, "invalid_request", "Last-Event-ID / after must be an integer") from None
        return StreamingResponse(self._sse(run_id, after), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    async def _sse(self, run_id: str, after: int) -> AsyncIterator[bytes]:
        store = self.service.store
        idle = 0
        while True:
            wake = self.service.wakeup(run_id)
            run = await asyncio.to_thread(store.get_run, run_id)
            if run is not None and run.state == "running":
                await self.service.take_over_runs(run_id)  # when its replica died: goes on here
            for seq, event in await asyncio.to_thread(store.events, run_id, after):
                after = seq
                yield f"id: {seq}\nevent: {event.get('type', 'event')}\ndata: {json.dumps(event)}\n\n".encode()
            if run is None or run.state != "running":
                state = run.state if run else "deleted"
                yield f"event: end\ndata: {json.dumps({'runId': run_id, 'state': state})}\n\n".encode()
                return
            try:
                # Woken by any replica's events (PostgreSQL NOTIFY); the timeout is the fallback.
                await asyncio.wait_for(wake.wait(), timeout=0.5)
            except TimeoutError:
                idle += 1
                if idle % KEEPALIVE_EVERY == 0:
                    yield b": keep-alive\n\n"  # a comment: clients and proxies see the stream is alive

    async def _file_call(self, request: Request, name: str, args: dict[str, Any]) -> tuple[str, ToolCallOutcome]:
        """One pipeline call of the space for a file endpoint: judged once by the space's
        policy (where links lead), with its ``maxFileSize``; a call the policy would ask about
        is not run (nobody can approve it here)."""
        space = await self.space(request)
        path = request.path_params["path"]
        why = path_problem(path)
        if why:
            raise ServiceError(400, "invalid_path", f"path {path[:80]!r} {why}")
        policy, env = await self.service.environment(space)
        result = await space_pipeline(env.env, policy).run(PipelineCall(name, {"path": path, **args}))
        verdict = result.pending.decision if result.pending is not None else result.data
        if isinstance(verdict, Decision):
            extra = "; send it as an operation in a run to ask for approval" if verdict.action == "ask" else ""
            raise ServiceError(403, "policy_denied", verdict.reason + extra)
        _raise_for(result, path)
        return path, result

    async def get_file(self, request: Request) -> Response:
        path, result = await self._file_call(request, "getFile", {})
        if isinstance(result.data, bytes):
            return Response(result.data, media_type="application/octet-stream")
        return JSONResponse({"path": path, "entries": [
            {"name": e.name, "isDir": e.is_dir, "size": e.size} for e in result.data]})

    async def put_file(self, request: Request) -> Response:
        data = await request.body()
        if len(data) > MAX_BODY_BYTES:
            raise ServiceError(413, "body_too_large", f"file over {MAX_BODY_BYTES} bytes")
        args = {"content": base64.b64encode(data).decode("ascii"), "encoding": "base64", "overwrite": True}
        path, result = await self._file_call(request, "createFile", args)
        return JSONResponse({"path": path, "bytesWritten": result.data.bytes_written})

    async def delete_file(self, request: Request) -> Response:
        await self._file_call(request, "deleteFile", {})
        return Response(status_code=204)


def _raise_for(result: ToolCallOutcome, path: str) -> None:
    """The HTTP error of a failed file endpoint call."""
    if not result.is_error:
        return
    error = result.data
    kind = getattr(error, "kind", None)
    if kind == "not_found" or isinstance(error, FileNotFoundInWorkspaceError):
        raise ServiceError(404, "file_not_found", f"no file {path!r} in the space")
    if kind == "is_directory" or isinstance(error, NotAFileError):
        raise ServiceError(400, "not_a_file", f"{path!r} is a directory; only files can be changed here")
    if kind == "too_large":
        raise ServiceError(413, "file_too_large", str(error))
    raise ServiceError(400, "invalid_path", str(error) if error is not None else result.output)


ROUTES = [
    ("/health", "GET", "health", "Liveness and store kind"),
    ("/openapi.json", "GET", "openapi", "This document"),
    ("/v1/spaces", "POST", "create_space", "Create a space (policy preset + overrides, TTL)"),
    ("/v1/spaces", "GET", "list_spaces", "List the key's spaces"),
    ("/v1/spaces/{space_id}", "GET", "get_space", "Get a space"),
    ("/v1/spaces/{space_id}", "PATCH", "patch_space", "Rename a space or replace its policy"),
    ("/v1/spaces/{space_id}", "DELETE", "delete_space", "Delete a space and its workspace"),
    ("/v1/spaces/{space_id}/extend", "POST", "extend_space", "Extend a space's TTL"),
    ("/v1/spaces/{space_id}/runs", "POST", "create_run", "Execute an operations message"),
    ("/v1/spaces/{space_id}/runs", "GET", "list_runs", "List a space's runs"),
    ("/v1/runs/{run_id}", "GET", "get_run", "A run with all its events"),
    ("/v1/runs/{run_id}/resume", "POST", "resume_run",
     "Approve or deny the paused operation (409 already_decided if answered before); an empty body goes on "
     "after a raised limit or with an answer given through the pending store"),
    ("/v1/runs/{run_id}/cancel", "POST", "cancel_run", "Cancel a run"),
    ("/v1/runs/{run_id}/rewind", "POST", "rewind_run",
     "Put the space's files back as they were before the run (dryRun: only list the changes)"),
    ("/v1/runs/{run_id}/redo", "POST", "redo_run",
     "Take back the run's last rewind: its changes come back (dryRun: only list them)"),
    ("/v1/runs/{run_id}/events", "GET", "run_events", "Server-sent events of a run"),
    ("/v1/spaces/{space_id}/files/{path:path}", "GET", "get_file", "Read a file (or list a directory)"),
    ("/v1/spaces/{space_id}/files/{path:path}", "PUT", "put_file", "Write a file"),
    ("/v1/spaces/{space_id}/files/{path:path}", "DELETE", "delete_file", "Delete a file"),
]


def openapi_document() -> dict[str, Any]:
    """The OpenAPI 3.1 description of the API."""
    paths: dict[str, Any] = {}
    bodies = {"create_run": {"$ref": "#/components/schemas/OperationsMessage"},
              "resume_run": ResumeBody.model_json_schema(), "create_space": CreateSpace.model_json_schema()}
    for path, method, name, summary in ROUTES:
        op: dict[str, Any] = {"operationId": name, "summary": summary, "responses": {"200": {"description": "OK"}}}
        if name in bodies:
            op["requestBody"] = {"content": {"application/json": {"schema": bodies[name]}}}
        if name == "create_run":
            op["responses"]["200"]["content"] = {"application/json": {"schema": {"$ref": "#/components/schemas/EventsMessage"}}}
        paths.setdefault(path.replace("{path:path}", "{path}"), {})[method.lower()] = op
    return {
        "openapi": "3.1.0",
        "info": {"title": "codeloop spaces", "version": "1.0"},
        "paths": paths,
        "components": {
            "schemas": {"OperationsMessage": OperationsMessage.model_json_schema(),
                        "EventsMessage": EventsMessage.model_json_schema()},
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}],
    }


def create_app(store: SpacesStore, *, auth: bool = True, sandbox: bool = True,
               cleanup_interval_s: float = CLEANUP_INTERVAL_S, local: LocalSessions | None = None) -> Starlette:
    """The ASGI app over ``store``, with the web console at ``/`` (``local``: also this machine's
    ``codeloop run`` sessions, for ``codeloop console``). The store is closed when the app shuts down."""
    service = SpacesService(store, sandbox=sandbox)
    api = SpacesAPI(service, auth=auth)

    def wrap(handler: Any) -> Any:
        async def endpoint(request: Request) -> Response:
            try:
                return await handler(request)  # type: ignore[no-any-return]
            except ServiceError as exc:
                return _error(exc.status, exc.code, exc.message)
            except MessageRejectedError as exc:
                return _error(400, "invalid_message", str(exc))
            except PolicyConfigError as exc:
                return _error(400, "invalid_policy", str(exc))
        return endpoint

    routes = [Route(path, wrap(getattr(api, name)), methods=[method]) for path, method, name, _ in ROUTES]
    routes += console_routes(api, local)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async def cleaner() -> None:
            while True:
                try:
                    removed = await service.cleanup_expired()
                    if removed:
                        log.info("removed %d expired spaces", removed)
                except Exception:
                    log.exception("cleanup of expired spaces failed")
                await asyncio.sleep(cleanup_interval_s)

        async def keeper() -> None:
            while True:  # also at start-up: the runs of a server that stopped go on here
                try:
                    await service.keep_leases()
                except Exception:
                    log.exception("renewing leases or taking over runs failed")
                await asyncio.sleep(store.leases.lease_s / 3)

        service.follow_other_replicas()
        tasks = [asyncio.create_task(cleaner()), asyncio.create_task(keeper())]
        try:
            yield
        finally:
            for task in tasks:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            await service.close()
            store.close()

    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.service = service
    return app


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve(*, host: str, port: int, data_dir: Path | None, database: str | None, no_auth: bool,
          sandbox: bool = True, local: LocalSessions | None = None, no_auth_on_network: bool = False,
          lease_s: float = DEFAULT_LEASE_S) -> None:
    """Run the API with uvicorn until interrupted; raise ``ValueError`` for a bad configuration."""
    import uvicorn

    if no_auth and not is_loopback(host) and not no_auth_on_network:
        raise ValueError(f"--no-auth is only allowed on a loopback host, not {host!r}; "
                         "create a key with: codeloop spaces keys create "
                         "(or, to let anyone who reaches the port run commands, add --no-auth-on-network)")
    if not 0.5 <= lease_s <= 3600:
        raise ValueError(f"--lease-seconds {lease_s} is out of range: 0.5 to 3600")
    store = open_store(database, data_dir, lease_s=lease_s)
    try:
        single = store.hold_single_server()  # SQLite: one server per store
    except ValueError:
        store.close()
        raise
    if no_auth:
        where = f" on {host}, a network address" if not is_loopback(host) else ""
        print(f"WARNING: --no-auth{where}: anyone who can reach this port can run commands in these workspaces. "
              "Use only on a single-user machine.", file=sys.stderr)
    if not sandbox:
        print(f"WARNING: --no-sandbox: {UNSANDBOXED_WARNING}.", file=sys.stderr)
    app = create_app(store, auth=not no_auth, sandbox=sandbox, local=local)
    # A keep-alive longer than clients' idle gaps avoids the race where the server closes an idle
    # connection just as a client reuses it (seen as ReadError under load).
    try:
        uvicorn.run(app, host=host, port=port, log_level="warning", timeout_keep_alive=75)
    finally:
        if single is not None:
            single.release()
