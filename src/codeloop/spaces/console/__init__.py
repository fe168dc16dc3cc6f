"""The web console (issue 37): the spaces and runs of the logged-in key, their events live, and
their pending approvals answered with Approve / Deny; with ``codeloop console``, also the
``codeloop run`` sessions of this machine and their pending calls.

It is a thin reader and writer: a spaces run's answer goes through
:meth:`SpacesService.resume` (the HTTP API's path: one compare-and-set, so two answers at once
run the operation once and the second is told who answered first and when); a local
session's answer is the approvals store's ``decide`` (as ``codeloop approvals approve``). It
keeps no approval state; a decision shows as taken only from the server's answer.

The guards (login, cookie, CSRF, ``Origin``, CSP) are in :mod:`.security`; the HTML in the
Jinja2 templates of ``templates/``, rendered by :mod:`.pages` with autoescaping on.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from codeloop.policy.pending import AlreadyDecided, PendingStore, UnknownPendingCallError
from codeloop.spaces.console import pages
from codeloop.spaces.console.pages import PendingCard, render
from codeloop.spaces.console.security import (
    COOKIE,
    SECURITY_HEADERS,
    ConsoleSession,
    ConsoleSessions,
    LoginLimiter,
    csrf_ok,
    same_origin,
)
from codeloop.spaces.console.views import match_diffs, operation_diffs, transcript
from codeloop.spaces.operations import Approval
from codeloop.spaces.policy_config import PolicyConfigError, build_policy
from codeloop.spaces.service import ServiceError

if TYPE_CHECKING:
    from codeloop.spaces.server import SpacesAPI

MAX_FORM_BYTES = 16 * 1024
_DECISIONS: dict[str, Literal["approved", "denied"]] = {"approved": "approved", "denied": "denied"}
_STATIC = {"console.js": "text/javascript; charset=utf-8", "console.css": "text/css; charset=utf-8"}


def _utc(at: float) -> str:
    """A moment as the pages say it without JavaScript (the script shows it in the viewer's zone)."""
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(at))


@dataclass(frozen=True)
class LocalSessions:
    """What ``codeloop console`` adds: this machine's ``codeloop run`` sessions, for one key only."""

    owner: str
    """The key id of the machine owner's key: no other login sees these."""
    store: PendingStore
    """The approvals store ``codeloop run --approval-from store`` waits on."""
    who: str
    """How an answer from the page is recorded (``console user@host``)."""


class _Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _html(text: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(text, status_code=status, headers=SECURITY_HEADERS)


class Console:
    """The console's handlers over one :class:`SpacesAPI` (its service and auth)."""

    def __init__(self, api: SpacesAPI, local: LocalSessions | None = None) -> None:
        self.api = api
        self.local = local
        self.sessions = ConsoleSessions()
        self.limiter = LoginLimiter()
        self._static: dict[str, bytes] = {}
        self._open_session = ConsoleSession("", "local", secrets.token_urlsafe(32), float("inf"))

    # --- guards
    def _session(self, request: Request) -> ConsoleSession | None:
        if not self.api.auth:  # --no-auth: the one owner "local", as the API serves it; a CSRF token still
            return self._open_session  # (another site's page cannot read it) and the Origin check hold
        return self.sessions.get(request.cookies.get(COOKIE))

    async def _form(self, request: Request) -> dict[str, str]:
        body = await request.body()
        if len(body) > MAX_FORM_BYTES:
            raise _Refused(413, f"form over {MAX_FORM_BYTES} bytes")
        try:
            raw = parse_qs(body.decode("utf-8"), keep_blank_values=True, max_num_fields=20)
        except (UnicodeDecodeError, ValueError):
            raise _Refused(400, "the form is not valid URL-encoded UTF-8") from None
        return {k: v[-1] for k, v in raw.items()}

    def _check_origin(self, request: Request) -> None:
        if not same_origin(request.headers.get("origin"), request.url.scheme, request.headers.get("host")):
            raise _Refused(403, "refused: this form must be sent from the console's own page (Origin differs)")

    async def _post(self, request: Request) -> tuple[ConsoleSession, dict[str, str]]:
        """The session and form of a POST, after its Origin and CSRF token are checked."""
        self._check_origin(request)
        session = self._session(request)
        if session is None:
            raise _Refused(401, "not logged in (or the login expired): log in again")
        form = await self._form(request)
        if not csrf_ok(session, form.get("csrf")):
            raise _Refused(403, "refused: the form's CSRF token is missing or wrong; reload the page")
        return session, form

    @staticmethod
    def _wants_json(request: Request) -> bool:
        return "application/json" in request.headers.get("accept", "")

    def _answer(self, request: Request, status: int, message: str, session: ConsoleSession | None,
                back: str = "/", at: float | None = None) -> Response:
        if self._wants_json(request):
            body: dict[str, Any] = {"ok": status < 400, "message": message}
            if at is not None:  # the page shows this moment in the viewer's zone instead of UTC
                body.update(at=at, atText=_utc(at))
            return JSONResponse(body, status_code=status, headers=SECURITY_HEADERS)
        return _html(render("message.html", title="Decision" if status < 400 else "Refused", ok=status < 400,
                            message=message, back=back, pending=0, csrf=session.csrf if session else None,
                            logged_in=session is not None), status)

    # --- login
    @staticmethod
    def _login_page(error: str = "") -> str:
        return render("login.html", title="Log in", error=error, pending=0, logged_in=False)

    async def login_form(self, request: Request) -> Response:
        return _html(self._login_page())

    async def login(self, request: Request) -> Response:
        client = request.client.host if request.client else "?"
        try:
            self._check_origin(request)
            wait = self.limiter.blocked(client)
            if wait:
                return _html(self._login_page(f"too many wrong keys: try again in {int(wait) + 1} s"), 429)
            form = await self._form(request)
        except _Refused as exc:
            return _html(self._login_page(exc.message), exc.status)
        key = form.get("key", "").strip()
        owner = await asyncio.to_thread(self.api.service.store.key_owner, key) if key else None
        if owner is None:
            self.limiter.failed(client)
            return _html(self._login_page("unknown API key"), 401)
        session = self.sessions.login(owner)
        response = RedirectResponse("/", status_code=303, headers=SECURITY_HEADERS)
        response.set_cookie(COOKIE, session.token, max_age=int(self.sessions.ttl_s), httponly=True,
                            samesite="strict", secure=request.url.scheme == "https", path="/")
        return response

    async def logout(self, request: Request) -> Response:
        try:
            await self._post(request)
        except _Refused as exc:
            return self._answer(request, exc.status, exc.message, None)
        self.sessions.logout(request.cookies.get(COOKIE))
        response = RedirectResponse("/console/login", status_code=303, headers=SECURITY_HEADERS)
        response.delete_cookie(COOKIE, path="/")
        return response

    # --- pages
    async def static(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in _STATIC:
            return Response("not found", status_code=404, headers=SECURITY_HEADERS)
        if name not in self._static:
            self._static[name] = resources.files(__package__).joinpath("static", name).read_bytes()
        headers = {**SECURITY_HEADERS, "Cache-Control": "no-cache"}
        return Response(self._static[name], media_type=_STATIC[name], headers=headers)

    def _owns_machine(self, session: ConsoleSession) -> bool:
        return self.local is not None and session.owner == self.local.owner

    async def _pending_count(self, session: ConsoleSession) -> int:
        store = self.api.service.store
        count = 0
        for space in await asyncio.to_thread(store.list_spaces, session.owner):
            runs = await asyncio.to_thread(store.list_runs, space.id)
            count += sum(1 for r in runs if r.state == "awaiting_approval")
        if self._owns_machine(session):
            assert self.local is not None
            count += len(await asyncio.to_thread(self.local.store.list))
        return count

    async def index(self, request: Request) -> Response:
        session = self._session(request)
        if session is None:
            return RedirectResponse("/console/login", status_code=303, headers=SECURITY_HEADERS)
        store = self.api.service.store
        # A run awaiting approval whose pending call is gone counts but shows no card (None).
        cards: list[PendingCard | None] = []
        spaces: list[tuple[Any, list[Any]]] = []
        for space in await asyncio.to_thread(store.list_spaces, session.owner):
            runs = sorted(await asyncio.to_thread(store.list_runs, space.id), key=lambda r: r.created_at, reverse=True)
            for run in runs:
                if run.state == "awaiting_approval":
                    cards.append(await self._run_card(session, run))
            spaces.append((space, runs))
        local_sessions = None
        if self._owns_machine(session):
            local_sessions, local_cards = await self._local_section(session)
            cards += local_cards
        return _html(render("index.html", title="Spaces and runs", cards=cards, spaces=spaces,
                            local_sessions=local_sessions, pending=len(cards), csrf=session.csrf, logged_in=True))

    async def _run_card(self, session: ConsoleSession, run: Any) -> PendingCard | None:
        asked = await asyncio.to_thread(self.api.service.store.pending.for_step, run.id, run.pending_operation or "")
        if asked is None:
            return None
        return PendingCard(
            action=f"/console/runs/{run.id}/decide", csrf=session.csrf, command=asked.summary(2000),
            paths=asked.paths, rule=asked.rule, reason=asked.reason, session=run.id, asked_at=asked.created_at,
            fields={"operationId": str(asked.step)}, session_href=f"/console/runs/{run.id}")

    async def run_page(self, request: Request) -> Response:
        session = self._session(request)
        if session is None:
            return RedirectResponse("/console/login", status_code=303, headers=SECURITY_HEADERS)
        run_id = request.path_params["run_id"]
        try:
            run = await self.api.service.run_for(session.owner, run_id)
            space = await self.api.service.space_for(session.owner, run.space_id)
        except ServiceError as exc:
            return self._answer(request, exc.status, exc.message, session)
        store = self.api.service.store
        events = await asyncio.to_thread(store.events, run_id)
        try:
            fs = build_policy(space.policy).filesystem
        except PolicyConfigError:  # a policy that no longer builds: show no file content at all
            fs = build_policy({"filesystem": {"enabled": False}}).filesystem
        all_diffs = operation_diffs(run.message, fs)
        diffs = match_diffs(events, all_diffs)
        unused = [d for d in all_diffs if not any(d is m for m in diffs.values())]
        show_all = request.query_params.get("all") == "1"
        card = await self._run_card(session, run) if run.state == "awaiting_approval" else None
        last = events[-1][0] if events else 0
        all_href = f"/console/runs/{run.id}?all=1"
        data = {"stream": f"/console/runs/{run.id}/events", "live": run.state == "running",
                "after": last, "diffs": unused, "shown": None if show_all else pages.EVENTS_SHOWN,
                "hidden": 0 if show_all else max(0, len(events) - pages.EVENTS_SHOWN),
                "tail": pages.OUTPUT_TAIL_LINES, "allHref": all_href}
        pending = await self._pending_count(session)
        return _html(render("run.html", title=f"Run {run.id}", run=run, space=space, card=card, events=events,
                            diffs=diffs, show_all=show_all, all_href=all_href, data=data, pending=pending,
                            csrf=session.csrf, logged_in=True))

    async def run_events(self, request: Request) -> Response:
        """The run's SSE stream (the API's), authorised by the login cookie."""
        session = self._session(request)
        if session is None:
            return Response("not logged in", status_code=401, headers=SECURITY_HEADERS)
        run_id = request.path_params["run_id"]
        try:
            await self.api.service.run_for(session.owner, run_id)
            after = int(request.headers.get("last-event-id") or request.query_params.get("after") or 0)
        except ServiceError as exc:
            return Response(exc.message, status_code=exc.status, headers=SECURITY_HEADERS)
        except ValueError:
            return Response("after must be an integer", status_code=400, headers=SECURITY_HEADERS)
        return StreamingResponse(self.api._sse(run_id, after), media_type="text/event-stream",
                                 headers={**SECURITY_HEADERS, "X-Accel-Buffering": "no"})

    async def decide(self, request: Request) -> Response:
        """Approve or deny a spaces run's pending operation through the API's resume path."""
        run_id = request.path_params["run_id"]
        back = f"/console/runs/{run_id}"
        try:
            session, form = await self._post(request)
        except _Refused as exc:
            return self._answer(request, exc.status, exc.message, self._session(request), back)
        decision: Literal["approved", "denied"] | None = _DECISIONS.get(form.get("decision", ""))
        if decision is None:
            return self._answer(request, 400, "choose Approve or Deny", session, back)
        approval = Approval(operationId=form.get("operationId", ""), decision=decision,
                            reason=form.get("reason", "")[:500] or None)
        try:
            result = await self.api.service.resume(session.owner, run_id, approval)
        except ServiceError as exc:
            if exc.code == "already_decided":
                entry = await asyncio.to_thread(self.api.service.store.pending.for_step, run_id,
                                                approval.operationId)
                if entry is not None and entry.decided_at is not None:
                    verdict = "approved" if entry.status in ("approved", "running", "ran", "interrupted") \
                        else entry.status
                    return self._answer(request, 409, f"operation {approval.operationId} was already {verdict} by "
                                        f"{entry.decided_by or '?'} at {_utc(entry.decided_at)}", session, back,
                                        at=entry.decided_at)
            return self._answer(request, exc.status, exc.message, session, back)
        return self._answer(request, 200, f"{decision} by you; the run is now {result.get('status')}",
                            session, back)

    # --- this machine (codeloop console only)
    async def _local_section(self, session: ConsoleSession) -> tuple[list[Any], list[PendingCard | None]]:
        """This machine's sessions (the newest 200) and its pending calls."""
        from codeloop.sessions.catalog import list_sessions

        assert self.local is not None
        cards: list[PendingCard | None] = [PendingCard(
            action=f"/console/local/approvals/{e.id}/decide", csrf=session.csrf, command=e.summary(2000),
            paths=e.paths, rule=e.rule, reason=e.reason, session=e.session, asked_at=e.created_at, fields={},
            session_href=f"/console/local/sessions/{e.session}")
            for e in await asyncio.to_thread(self.local.store.list)]
        infos = await asyncio.to_thread(list_sessions)
        return list(infos[:200]), cards

    async def local_decide(self, request: Request) -> Response:
        try:
            session, form = await self._post(request)
            if not self._owns_machine(session):
                raise _Refused(404, "no such pending call")
        except _Refused as exc:
            return self._answer(request, exc.status, exc.message, self._session(request))
        assert self.local is not None
        decision = form.get("decision")
        if decision not in ("approved", "denied"):
            return self._answer(request, 400, "choose Approve or Deny", session)
        verdict = "approve" if decision == "approved" else "deny"
        try:
            out = await asyncio.to_thread(self.local.store.decide, request.path_params["pending_id"], verdict,
                                          self.local.who, form.get("reason", "")[:500])
        except UnknownPendingCallError:
            return self._answer(request, 404, "no such pending call", session)
        if isinstance(out, AlreadyDecided):
            at = _utc(out.at) if out.at else "?"
            return self._answer(request, 409, f"already decided by {out.by or '?'} at {at} ({out.verdict})", session,
                                at=out.at)
        return self._answer(request, 200, f"{decision} by you", session)

    async def local_session(self, request: Request) -> Response:
        from codeloop.sessions.log import load_events

        session = self._session(request)
        if session is None:
            return RedirectResponse("/console/login", status_code=303, headers=SECURITY_HEADERS)
        session_id = request.path_params["session_id"]
        if not self._owns_machine(session):
            return self._answer(request, 404, "no such session", session)
        try:
            events = await asyncio.to_thread(load_events, session_id)
        except (OSError, ValueError):
            return self._answer(request, 404, f"no session {session_id}", session)
        show_all = request.query_params.get("all") == "1"
        return _html(render("session.html", title=f"Session {session_id}", session_id=session_id,
                            items=transcript(events), show_all=show_all,
                            all_href=f"/console/local/sessions/{session_id}?all=1",
                            pending=await self._pending_count(session), csrf=session.csrf, logged_in=True))


def console_routes(api: SpacesAPI, local: LocalSessions | None = None) -> list[Route]:
    """The console's routes (``/`` and ``/console/...``), served beside the API."""
    console = Console(api, local)
    return [
        Route("/", console.index, methods=["GET"]),
        Route("/console/login", console.login_form, methods=["GET"]),
        Route("/console/login", console.login, methods=["POST"]),
        Route("/console/logout", console.logout, methods=["POST"]),
        Route("/console/static/{name}", console.static, methods=["GET"]),
        Route("/favicon.ico", lambda _: Response(status_code=204, headers=SECURITY_HEADERS), methods=["GET"]),
        Route("/console/runs/{run_id}", console.run_page, methods=["GET"]),
        Route("/console/runs/{run_id}/events", console.run_events, methods=["GET"]),
        Route("/console/runs/{run_id}/decide", console.decide, methods=["POST"]),
        Route("/console/local/approvals/{pending_id}/decide", console.local_decide, methods=["POST"]),
        Route("/console/local/sessions/{session_id}", console.local_session, methods=["GET"]),
    ]
