"""The AG-UI WebSocket transport: ``ws(s)://host/ws/v1/threads/{thread}`` (docs/design.md §6).

One socket watches one thread. The consumer is thin: it authenticates, validates each client
frame with a pydantic model, calls one service or selector (through ``sync_to_async``, never the
ORM directly) and sends frames. Event frames carry the logged wire JSON spliced in as is: the log
(``follow``) is the only source of events, so they arrive in seq order without gaps or repeats,
and a follower that fell behind catches up from the database by itself.

Close codes: 4401 authentication failed (bad key or token, no ``auth`` frame in time, the token
expired), 4403 a browser page on an origin its tenant does not allow (or holding an API key, or
a token of another tenant than the session's thread), 4404 the thread is not reachable with the
session's tenants, 4409 the session's tenants hold several such threads (both held until the first
frame, as an ``auth`` frame may bring a user token). Every other error is an ``error`` frame, and
the socket stays usable. A user token reaches only its user's threads (another's reads as missing:
``not_found`` frames), also when it narrows a staff session's socket; each frame needs its scope (``subscribe``/``state.get``: ``threads:read``, ``run``/``cancel``: ``runs``,
``state.patch``: ``state:write``, ``intervene``: ``runs``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from typing import Any

import orjson
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings
from django.utils import timezone
from pydantic import ValidationError

from agui_app.access import Kind, Principal
from agui_app.concurrency.db_threads import in_db_thread
from agui_app.errors import AmbiguousThread, ApiError, Unauthenticated, Unprocessable, not_found
from agui_app.models import StateSource, Thread
from agui_app.runtime.admission import start_run_request
from agui_app.runtime.presence import follow_attached
from agui_app.runtime.run_messages import closing_snapshot
from agui_app.runtime.warm import principal_of
from agui_app.selectors.runs import run_or_404
from agui_app.selectors.threads import staff_thread, thread_for, thread_or_404
from agui_app.services.interventions import intervention_send
from agui_app.services.runs import run_request_cancel
from agui_app.services.state import state_apply_patch
from agui_app.services.tokens import TokenExpired
from agui_app.transports.edge.answers import error_frame, socket_refused
from agui_app.transports.edge.auth import bearer_token, insufficient_scope
from agui_app.transports.edge.browsers import origin_refusal, scope_site_origin, staff_session_allowed
from agui_app.transports.inputs import ID_PATTERN, check_json_input
from agui_app.transports.ws.frames import (
    CLOSE_AMBIGUOUS,
    CLOSE_FORBIDDEN,
    CLOSE_NOT_FOUND,
    CLOSE_UNAUTHENTICATED,
    EVENT_FRAME,
    FRAME_SCOPES,
    FRAMES,
    UNLOGGED_EVENT_FRAME,
    AuthFrame,
    CancelFrame,
    InterveneFrame,
    PingFrame,
    RunFrame,
    StateGetFrame,
    StatePatchFrame,
    SubscribeFrame,
    TokenBucket,
    invalid_frame,
    run_input_from_frame,
)

logger = logging.getLogger(__name__)


athread_for = in_db_thread(thread_for)
athread_or_404 = in_db_thread(thread_or_404)
arun_or_404 = in_db_thread(run_or_404)
arun_request_cancel = in_db_thread(run_request_cancel)
astaff_thread = in_db_thread(staff_thread)


class ThreadConsumer(AsyncJsonWebsocketConsumer):
    """One client's socket on one thread: at most one follower task, frames handled in order."""

    channel_layer_alias = None  # the hub follows; no layer channel per socket
    rate_per_second: float = 50.0
    rate_burst: int = 50

    async def connect(self) -> None:
        self.thread_id: str = self.scope["url_route"]["kwargs"]["thread_id"]
        self.principal: Principal | None = None
        self.session_refusal: tuple[ApiError, int] | None = None  # a session whose thread is unreachable
        self.closing = False
        self.follower: asyncio.Task[None] | None = None
        self.own_runs: set[str] = set()  # runs this socket started: they end with their history
        self.auth_timer: asyncio.Task[None] | None = None
        self.bucket = TokenBucket(self.rate_per_second, self.rate_burst)
        await self.accept()  # first, so that a refusal can say why in an error frame
        if not ID_PATTERN.match(self.thread_id):
            await self.refuse(not_found("Thread"), CLOSE_NOT_FOUND)
            return
        authorization = self.header("authorization")
        if authorization is not None:
            await self.authenticate_key(bearer_token(authorization), ref=None)
        elif staff_session_allowed(
            self.scope.get("user"), self.header("origin"), site=scope_site_origin(self.scope)
        ):
            try:
                thread = await astaff_thread(self.scope["user"], self.thread_id)
            except AmbiguousThread as exc:  # held: a user token in the auth frame may still name it
                self.session_refusal = (exc, CLOSE_AMBIGUOUS)
            except ApiError as exc:  # held: a user token's run may create it
                self.session_refusal = (exc, CLOSE_NOT_FOUND)
            else:
                self.principal = Principal.for_session(thread.tenant, user_pk=self.scope["user"].pk)
                return
        if authorization is None:
            self.auth_timer = asyncio.create_task(self.expire_auth(), name=f"agui-ws-auth-{self.thread_id}")

    async def disconnect(self, code: int) -> None:
        self.closing = True
        if self.auth_timer is not None:
            self.auth_timer.cancel()
        await self.stop_following()

    # --- frames in --------------------------------------------------------------------------

    async def receive(
        self, text_data: str | None = None, bytes_data: bytes | None = None, **kwargs: Any
    ) -> None:
        if self.closing:
            return
        if not self.bucket.take():
            await self.send_error("rate_limited", "Too many frames; slow down.", ref=None)
            return
        raw: str | bytes = text_data if text_data is not None else (bytes_data or b"")
        limit = settings.AGUI_WS_MAX_FRAME_BYTES
        if len(raw) > limit or (isinstance(raw, str) and len(raw.encode()) > limit):
            await self.send_error(
                "frame_too_large", f"Frames are limited to {limit} bytes.", ref=None, details={"limit": limit}
            )
            return
        try:
            content = orjson.loads(raw)
            check_json_input(content, max_depth=settings.AGUI_JSON_MAX_DEPTH, where="the frame")
        except orjson.JSONDecodeError as exc:
            await self.send_error("malformed_json", f"The frame is not valid JSON: {exc}", ref=None)
            return
        except Unprocessable as exc:  # NUL characters, nesting: nothing in it could be stored
            await self.send_error(exc.code, exc.message, ref=None, details=exc.details)
            return
        await self.receive_json(content)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        kind = content.get("type") if isinstance(content, dict) else None
        if not isinstance(kind, str):
            await self.send_error("invalid_frame", 'A frame is a JSON object with a string "type".', ref=None)
            return
        model = FRAMES.get(kind)
        if model is None:
            expected = ", ".join(FRAMES)
            await self.send_error(
                "unknown_type", f"Unknown frame type {kind!r}; expected one of {expected}.", ref=kind
            )
            return
        try:
            if self.principal is None and kind != "auth" and self.session_refusal is not None:
                await self.refuse(*self.session_refusal, ref=kind)
                return
            if self.principal is None and kind != "auth":
                await self.send_error(
                    "unauthenticated", 'Authenticate first: {"type":"auth","apiKey":"..."}.', ref=kind
                )
                return
            if self.principal is not None and self.principal.expired(timezone.now()):
                error = (
                    TokenExpired("The token has expired; authenticate again with a new one.")
                    if self.principal.is_end_user
                    else Unauthenticated("The API key has expired.")
                )
                await self.refuse(error, CLOSE_UNAUTHENTICATED, ref=kind)
                return
            if (
                kind in FRAME_SCOPES
                and self.principal is not None
                and not self.principal.has(FRAME_SCOPES[kind])
            ):
                raise insufficient_scope(self.principal, FRAME_SCOPES[kind])
            try:
                frame = model.model_validate(content)
            except ValidationError as exc:
                raise invalid_frame(kind, exc) from exc
            await getattr(self, "on_" + kind.replace(".", "_"))(frame)
        except ApiError as exc:
            if kind == "auth" and self.principal is None:
                await self.refuse(exc, CLOSE_UNAUTHENTICATED, ref=kind)
            else:
                await self.send_error(exc.code, exc.message, ref=kind, details=exc.details)
        except Exception:
            logger.exception("WebSocket %s frame failed on thread %s", kind, self.thread_id)
            await self.send_error("internal_error", "The frame could not be handled.", ref=kind)

    async def on_auth(self, frame: AuthFrame) -> None:
        if self.principal is not None and self.principal.kind is not Kind.SESSION:
            raise ApiError("This socket is already authenticated.", code="already_authenticated")
        await self.authenticate_key(frame.api_key, ref="auth")

    async def on_subscribe(self, frame: SubscribeFrame) -> None:
        """Replay the log after ``after`` (``null``: from its current end), then follow it live."""
        thread = await self.current_thread()
        after = thread.last_seq if frame.after is None else frame.after
        if after > thread.last_seq:
            raise ApiError(
                f"after={after} is beyond the thread's log (last seq {thread.last_seq}).",
                code="bad_cursor",
                details={"lastSeq": thread.last_seq},
            )
        await self.start_following(thread.pk, after)

    async def on_run(self, frame: RunFrame) -> None:
        """Start a run like ``POST /api/v1/agents/{agent}``; an unsubscribed socket then follows
        the log from the run's admission, so the client sees it from ``RUN_STARTED``."""
        assert self.principal is not None
        run_input = run_input_from_frame(frame)
        if run_input.thread_id != self.thread_id:
            raise Unprocessable(
                f"input.threadId is {run_input.thread_id!r} but this socket is on {self.thread_id!r}.",
                code="thread_mismatch",
                details={"fields": [{"field": "input.threadId", "message": "not this socket's thread"}]},
            )
        started = await start_run_request(
            principal=self.principal, agent_slug=frame.agent, run_input=run_input, follow=False, attached=True
        )
        admission = started.admission
        self.own_runs.add(run_input.run_id)
        if self.follower is None or self.follower.done():
            await self.start_following(admission.thread.pk, admission.cursor)

    async def on_state_patch(self, frame: StatePatchFrame) -> None:
        """Apply the patch; ``state.ack`` answers, the ``STATE_DELTA`` itself comes through the log."""
        thread = await self.current_thread()
        try:
            change = await in_db_thread(state_apply_patch)(
                thread_pk=thread.pk,
                ops=frame.patch,
                source=StateSource.CLIENT,
                base_version=frame.base_version,
            )
        except Thread.DoesNotExist as exc:  # deleted since the lookup
            raise not_found("Thread") from exc
        await self.send_frame({"type": "state.ack", "version": change.version})

    async def on_state_get(self, frame: StateGetFrame) -> None:
        """Resync: the ``state.ack`` frame with the stored state (not an ``event``: it is not logged)."""
        thread = await self.current_thread()
        await self.send_frame({"type": "state.ack", "version": thread.state_version, "state": thread.state})

    async def on_cancel(self, frame: CancelFrame) -> None:
        """Ask the run's process to cancel it; its ``RUN_FINISHED`` (cancelled) arrives as an event."""
        run = await arun_or_404(await self.current_thread(), frame.run_id)
        await arun_request_cancel(run=run)

    async def on_intervene(self, frame: InterveneFrame) -> None:
        """A message to the active run (read at its next model request): ``intervention.ack``
        answers; the ``CUSTOM agui.intervention`` event itself comes through the log."""
        assert self.principal is not None
        thread = await self.current_thread()
        sent = await in_db_thread(intervention_send)(
            principal=self.principal, thread=thread, message=frame.message, run_id=frame.run_id
        )
        await self.send_frame({"type": "intervention.ack", "runId": sent.run_id, "seq": sent.event.seq})

    async def on_ping(self, frame: PingFrame) -> None:
        await self.send_frame({"type": "pong"})

    # --- authentication ---------------------------------------------------------------------

    async def authenticate_key(self, raw_key: str | None, *, ref: str | None) -> None:
        """A key or a user token; a browser page held to its tenant's origins (``transports.browsers``).

        On a socket a staff session opened, a user token of the thread's tenant replaces the
        session, so a page acts as the token's user here as it does over REST. It can only narrow:
        a key, or a token of another tenant, is refused.
        """
        try:
            principal = await principal_of(raw_key)
        except Unauthenticated as exc:  # an expired token
            await self.refuse(exc, CLOSE_UNAUTHENTICATED, ref=ref)
            return
        if principal is None:
            await self.refuse(
                ApiError("Invalid API key or user token.", code="unauthenticated"),
                CLOSE_UNAUTHENTICATED,
                ref=ref,
            )
            return
        refusal = origin_refusal(principal, self.header("origin"), site=scope_site_origin(self.scope))
        if refusal is not None:
            await self.refuse(refusal, CLOSE_FORBIDDEN, ref=ref)
            return
        session = self.principal
        if session is not None and not principal.is_end_user:
            raise ApiError(
                "A session socket takes only a user token to narrow it.", code="already_authenticated"
            )
        if session is not None and principal.tenant.pk != session.tenant.pk:
            error = ApiError("The token is for another tenant than this thread's.", code="tenant_mismatch")
            await self.refuse(error, CLOSE_FORBIDDEN, ref=ref)
            return
        self.principal = principal
        self.session_refusal = None
        if self.auth_timer is not None:
            self.auth_timer.cancel()
        if session is not None and await athread_for(principal, self.thread_id) is None:
            await self.stop_following()  # followed as the session: not this user's thread

    async def expire_auth(self) -> None:
        await asyncio.sleep(settings.AGUI_WS_AUTH_TIMEOUT_SECONDS)
        if self.principal is None and not self.closing:
            if self.session_refusal is not None:
                await self.refuse(*self.session_refusal)
                return
            seconds = settings.AGUI_WS_AUTH_TIMEOUT_SECONDS
            error = ApiError(f"No auth frame within {seconds:g} s.", code="auth_timeout")
            await self.refuse(error, CLOSE_UNAUTHENTICATED)

    async def refuse(self, error: ApiError, close_code: int, *, ref: str | None = None) -> None:
        """An error frame, then close: the socket is of no use (auth failed, thread unreachable)."""
        self.closing = True
        await self.send_error(error.code, error.message, ref=ref)
        await self.close(close_code)

    async def current_thread(self) -> Thread:
        """The thread as stored now (it may have been created by a run, or deleted, meanwhile)."""
        assert self.principal is not None
        return await athread_or_404(self.principal, self.thread_id)

    # --- frames out -------------------------------------------------------------------------

    async def start_following(self, thread_pk: uuid.UUID, after: int) -> None:
        """Replace the follower (one per socket) by one sending the log after ``after``."""
        await self.stop_following()
        self.follower = asyncio.create_task(self.forward(thread_pk, after), name=f"agui-ws-{self.thread_id}")

    async def stop_following(self) -> None:
        if self.follower is not None:
            self.follower.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.follower
            self.follower = None

    async def forward(self, thread_pk: uuid.UUID, after: int) -> None:
        last = after
        try:
            async for batch in follow_attached(thread_pk, after):
                for event in batch:  # the logged JSON spliced in: no decode/re-encode per event
                    if event.is_terminal and event.run_id in self.own_runs:
                        await self.send_closing_snapshot(thread_pk, event.run_id)
                    await self.send(text_data=EVENT_FRAME % (event.seq, event.data))
                    last = event.seq
        except Exception:
            if self.closing:  # the socket went away under a send
                return
            logger.exception("WebSocket follower of thread %s failed after seq %d", thread_pk, last)
            with contextlib.suppress(Exception):  # best effort: the socket may be the failure
                await self.send_error(
                    "subscription_failed",
                    f"The subscription stopped after seq {last}; subscribe again with after={last}.",
                    ref="subscribe",
                    details={"after": last},
                )

    async def send_closing_snapshot(self, thread_pk: uuid.UUID, run_id: str) -> None:
        """A run this socket started ends with its ``MESSAGES_SNAPSHOT`` when its input lacked some of
        the history; not logged, so its frame has no ``seq`` (``runtime.run_messages``)."""
        self.own_runs.discard(run_id)
        snapshot = await closing_snapshot(thread_pk, run_id)
        if snapshot is not None:
            await self.send(text_data=UNLOGGED_EVENT_FRAME % snapshot.data)

    async def send_frame(self, frame: dict[str, Any]) -> None:
        await self.send(text_data=orjson.dumps(frame).decode())

    async def send_error(
        self, code: str, message: str, *, ref: str | None, details: dict[str, Any] | None = None
    ) -> None:
        socket_refused(code, self.scope["path"])
        await self.send_frame(error_frame(code, message, ref=ref, details=details))

    def header(self, name: str) -> str | None:
        wanted = name.encode()
        for key, value in self.scope.get("headers", []):
            if key.lower() == wanted:
                return value.decode("latin1")
        return None
