"""Background runs and joining them (docs/design.md §13), as Channels consumers beside the AG-UI endpoint:

- ``POST /api/v1/threads/{thread}/runs`` — start a run that no request holds → 202 with the run;
- ``GET …/runs/{run}/stream`` — SSE of that run from its ``RUN_STARTED`` (or after ``Last-Event-ID``
  / ``?after=``) to its terminal event;
- ``GET …/runs/{run}/wait?timeout=<s>`` — the run's summary once it ended, with the thread's state
  version then and the messages it added; 408 ``wait_timeout`` when it has not ended in time.

A background run is detached like every run (it is a task of the server process); it has no
attached client, so it runs with ``onDisconnect: continue``.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import orjson
from django.conf import settings

from agui_app.access import Scope
from agui_app.concurrency.db_threads import in_db_thread
from agui_app.errors import ApiError, not_found
from agui_app.events.follow import follow
from agui_app.models import Thread
from agui_app.runtime.admission import start_run_request
from agui_app.selectors.run_results import TERMINAL_STATUSES, RunPosition, run_position, run_result
from agui_app.selectors.threads import thread_or_404
from agui_app.transports.edge.answers import Headers, internal_error, security_headers
from agui_app.transports.inputs import background_run_input, non_negative_int
from agui_app.transports.outputs import run_summary
from agui_app.transports.sse.consumer import SseConsumer, Stream
from agui_app.transports.sse.streams import run_stream

logger = logging.getLogger(__name__)

athread_or_404 = in_db_thread(thread_or_404)
arun_position = in_db_thread(run_position)
arun_result = in_db_thread(run_result)


class WaitTimeout(ApiError):
    status = 408
    code = "wait_timeout"


class JsonConsumer(SseConsumer):
    """A consumer that answers one JSON body (``answer``), with the SSE consumers' checks: the
    request's Host and method, credentials before the body, the body limit, and a client that goes
    away cancels the work at once (a long ``/wait`` holds nothing then)."""

    async def answer(self) -> tuple[int, Any, Headers]:
        raise NotImplementedError

    async def respond(self) -> None:
        try:
            self.check_request()
            status, body, headers = await self.answer()
        except ApiError as exc:
            await self.send_error(exc)
            return
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("answering %s %s failed", self.method, self.scope["path"])
            await self.send_error(internal_error())
            return
        content = orjson.dumps(body)
        await self.send_response(
            status,
            content,
            headers=[
                (b"content-type", b"application/json"),
                (b"content-length", str(len(content)).encode()),
                *security_headers(),
                *headers,
            ],
        )


class BackgroundRunConsumer(JsonConsumer):
    async def answer(self) -> tuple[int, Any, Headers]:
        principal = await self.principal(Scope.RUNS)
        thread_id = self.kwargs["thread_id"]
        slug, run_input = background_run_input(
            self.header("content-type"), await self.read_body(), thread_id=thread_id
        )
        agent, admission = await start_run_request(principal=principal, agent_slug=slug, run_input=run_input)
        body = {"threadId": thread_id, "agent": agent.slug, **run_summary(admission.run)}
        location = f"/api/v1/threads/{thread_id}/runs/{admission.run.run_id}"
        return 202, body, [(b"location", location.encode())]


async def locate_run(consumer: SseConsumer) -> tuple[Thread, RunPosition]:
    """The request's thread (reachable by its principal) and where its run sits in the log. 404s."""
    thread = await athread_or_404(await consumer.principal(Scope.THREADS_READ), consumer.kwargs["thread_id"])
    position = await arun_position(thread, consumer.kwargs["run_id"])
    if position is None:
        raise not_found("Run")
    if position.run.events_expired_at is not None:
        raise ApiError(
            "The run's events were deleted by the event-log retention.", code="events_expired", status=410
        )
    return thread, position


class RunStreamConsumer(SseConsumer):
    methods = ("GET",)

    async def open_stream(self) -> Stream:
        thread, position = await locate_run(self)
        # A cursor before the run's start (another run's event) still streams only this run.
        cursor = non_negative_int(self.header("last-event-id") or self.query("after"), "after", 0)
        after = max(cursor, position.before)
        if position.terminal is not None and after >= position.terminal:
            return empty_stream()  # the cursor is past the run's end: nothing to send
        from_start = after == position.before and not position.started
        return run_stream(thread.pk, position.run.run_id, after, skip_to_start=from_start)


async def empty_stream() -> Stream:
    return
    yield


def wait_seconds(raw: str | None) -> float:
    """``?timeout=`` in seconds (decimals allowed), cut to ``AGUI_RUN_WAIT_MAX_SECONDS``."""
    if raw is None or raw == "":
        return min(settings.AGUI_RUN_WAIT_DEFAULT_SECONDS, settings.AGUI_RUN_WAIT_MAX_SECONDS)
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise ApiError(f"timeout must be a number of seconds, got {raw[:40]!r}.", code="bad_timeout")
    return min(value, settings.AGUI_RUN_WAIT_MAX_SECONDS)


class RunWaitConsumer(JsonConsumer):
    methods = ("GET",)

    async def answer(self) -> tuple[int, Any, Headers]:
        timeout = wait_seconds(self.query("timeout"))
        thread, position = await locate_run(self)
        if position.run.status not in TERMINAL_STATUSES:
            run_id = position.run.run_id
            try:
                async with asyncio.timeout(timeout):
                    async for _ in follow(
                        thread.pk, position.last, stop=lambda e: e.run_id == run_id and e.is_terminal
                    ):
                        pass
            except TimeoutError:
                result = await arun_result(thread, run_id)
                raise WaitTimeout(
                    f"Run {run_id!r} has not ended within {timeout:g} s; wait again, or follow …/stream.",
                    details={"run": run_summary(result["run"]) if result else None},
                ) from None
        result = await arun_result(thread, position.run.run_id)
        assert result is not None
        body = {
            "threadId": thread.thread_id,
            **run_summary(result["run"]),
            "stateVersion": result["stateVersion"],
            "messages": result["messages"],
        }
        return 200, body, []
