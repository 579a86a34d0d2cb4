"""Shared state inside a run.

Tools see a copy-on-write document (``ctx.deps.state``). After every tool execution the
``StateSync`` capability commits what changed: it diffs against the last committed tree (fast,
because untouched subtrees are shared), flushes the run's buffered events so the log keeps its
order, and applies the ops to the *latest stored* state through the state service — so agent
and client writes interleave in commit order. An agent change that no longer applies (a client
removed what the agent edited) is refused: the run's copy is reloaded, a ``STATE_SNAPSHOT`` is
logged, and the tool gets an error the model can react to. One baseline and one lock per run,
so deltas compose even when the model calls several tools in parallel.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from django.conf import settings
from pydantic_ai import ModelRetry, RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import ToolCallPart
from pydantic_ai.tools import ToolDefinition

from agui_app.concurrency.db_threads import in_db_thread
from agui_app.errors import ApiError
from agui_app.events.hub import Subscription
from agui_app.events.shape import LoggedEvent, encode
from agui_app.models import StateSource
from agui_app.runtime.declarative import StateEvent, event_ops, take_state_events
from agui_app.runtime.predictive import PredictiveState
from agui_app.runtime.writer import RunEventWriter
from agui_app.services.private_state import private_state_apply, private_state_of, split_ops, without_private
from agui_app.services.state import state_apply_patch, state_log_snapshot, stored_state_if_newer
from agui_app.state.cow import CowDocument
from capabilities.runtime import StatePatchRejected, ToolDeps

astate_apply_patch = in_db_thread(state_apply_patch)
astate_log_snapshot = in_db_thread(state_log_snapshot)
astored_state_if_newer = in_db_thread(stored_state_if_newer)
aprivate_state_apply = in_db_thread(private_state_apply)
aprivate_state_of = in_db_thread(private_state_of)


class RunStateGateway:
    """Implements ``capabilities.runtime.StateGateway`` for one run."""

    def __init__(
        self,
        *,
        thread_pk: uuid.UUID,
        run_pk: int,
        run_id: str,
        writer: RunEventWriter,
        state: dict[str, Any],
        version: int,
        private_keys: frozenset[str] = frozenset(),
        private: dict[str, Any] | None = None,
        predictions: Sequence[dict[str, str]] = (),
        predict_per_second: float = 20.0,
    ) -> None:
        """``private_keys``: the server-only keys (tools see ``private`` merged into the document;
        changes to them are stored apart, ``services.private_state``, never logged);
        ``predictions``: Pattern D's declarations (``runtime.predictive``)."""
        self.thread_pk = thread_pk
        self.run_pk = run_pk
        self.run_id = run_id
        self.writer = writer
        self.private_keys = private_keys
        self.private: dict[str, Any] = dict(private or {})
        self.document = CowDocument(
            self._merged(without_private(state, private_keys)) if private_keys else state
        )
        self.version = version
        self.lock = asyncio.Lock()
        self.predictive = PredictiveState(
            predictions, source=self, private_keys=private_keys, per_second=predict_per_second
        )
        self.watcher: StateWatch | None = None

    @property
    def view(self) -> MutableMapping[str, Any]:
        return self.document.view

    @property
    def baseline(self) -> dict[str, Any]:
        """The state as last stored (what predictions are based on)."""
        return self.document.baseline

    def _merged(self, shared: dict[str, Any]) -> dict[str, Any]:
        return {**shared, **self.private} if self.private else shared

    def shared_view(self) -> dict[str, Any]:
        """The document without its server-only keys (what clients and, by default, the model see)."""
        return without_private(self.document.root, self.private_keys)

    async def log_snapshot(self) -> None:
        """Log a ``STATE_SNAPSHOT`` of the stored state after the buffered events; adopt it."""
        async with self.lock:
            await self.writer.flush()
            state, self.version = await astate_log_snapshot(
                thread_pk=self.thread_pk, run_pk=self.run_pk, run_id=self.run_id
            )
            self.document.adopt(self._merged(state))

    def watch(self, watch: StateWatch) -> None:
        """Read the stored state again only when ``watch`` saw another writer change it."""
        self.watcher = watch

    async def refresh(self) -> None:
        """Adopt the stored state if another writer changed it since this run last saw it (read
        only when the run's ``StateWatch`` saw a change, or cannot tell)."""
        if self.watcher is not None and not self.watcher.take_stale():
            return
        async with self.lock:
            stored = await astored_state_if_newer(thread_pk=self.thread_pk, version=self.version)
            if stored is not None:
                state, self.version = stored
                self.document.adopt(self._merged(state))

    async def apply_patch(self, ops: list[dict[str, Any]]) -> int:
        """The ``update_state`` tool: commit pending tool changes, then apply ``ops`` at once."""
        async with self.lock:
            await self._commit_locked()
            return await self._apply_locked(ops)

    async def commit(self) -> None:
        """Apply what tools changed through ``view`` since the last commit (one delta)."""
        async with self.lock:
            await self._commit_locked()

    async def settle_prediction(self, tool_call_id: str, *, ran: bool) -> None:
        """Pattern D, after a predicted tool ran (or raised, or was never run): unless its own change
        leaves clients where the predictions did, log deltas restoring the stored values first."""
        if tool_call_id not in self.predictive.calls:
            return
        async with self.lock:
            if ran and self.predictive.settles(tool_call_id, self.document.root):
                return
            # Restore what is stored now (a client may have written the key meanwhile).
            fresh = await astored_state_if_newer(thread_pk=self.thread_pk, version=self.version)
            stored = (self._merged(fresh[0]), fresh[1]) if fresh is not None else None
            for event in self.predictive.restore(tool_call_id, stored=stored):
                await self.writer.add(encode(event))

    async def apply_events(self, events: list[StateEvent]) -> int:
        """Pattern B: apply the state events a tool returned, in order, each as an agent write
        (a snapshot as its diff from what the run saw). Returns the version; raises
        ``StatePatchRejected`` at the first one refused (earlier ones stay applied)."""
        async with self.lock:
            await self._commit_locked()
            for event in events:
                ops = event_ops(event, self.document.root, keep=self.private_keys)
                if ops is None:
                    raise StatePatchRejected("A STATE_SNAPSHOT must hold a JSON object.")
                if ops:
                    await self._apply_locked(ops)
            return self.version

    async def _commit_locked(self) -> None:
        ops = self.document.commit()
        if ops:
            await self._apply_locked(ops)

    async def _apply_locked(self, ops: list[dict[str, Any]]) -> int:
        await self.writer.flush()
        try:
            shared, private = split_ops(ops, self.private_keys)
        except ValueError as exc:
            raise StatePatchRejected(f"The change was refused: {exc}.") from exc
        change = None
        try:
            if shared:
                change = await astate_apply_patch(
                    thread_pk=self.thread_pk,
                    ops=shared,
                    source=StateSource.AGENT,
                    run_pk=self.run_pk,
                    run_id=self.run_id,
                )
            if private:
                self.private = await aprivate_state_apply(thread_pk=self.thread_pk, ops=private)
        except ApiError as exc:
            # The change no longer applies to the stored state (or breaks its schema): reload.
            state, self.version = await astate_log_snapshot(
                thread_pk=self.thread_pk, run_pk=self.run_pk, run_id=self.run_id
            )
            if self.private_keys:
                self.private = await aprivate_state_of(self.thread_pk)
            self.document.adopt(self._merged(state))
            raise StatePatchRejected(exc.message, details=exc.details) from exc
        if change is not None:
            self.version = change.version
        stored = (
            change.state if change is not None else without_private(self.document.baseline, self.private_keys)
        )
        # Tools running in parallel may have written since this commit was taken: rebase keeps
        # their changes (for the next commit) on top of what is stored now.
        self.document.rebase(self._merged(stored))
        return self.version


STATE_TYPES = frozenset({"STATE_DELTA", "STATE_SNAPSHOT"})


class StateWatch(Subscription):
    """A run's watch on its thread's state: the hub hands it every event logged on the thread, and
    it notes whether a state change of another writer (a client, the API, another run) came — so
    the run reads the stored state before a model request only then. It also says "stale" when it
    cannot tell: before it was told which run it watches for, and while the channel layer is down
    (other processes' changes do not reach this hub then)."""

    run_id: str | None = None
    stale = True

    def push(self, events: Sequence[LoggedEvent]) -> None:
        if not self.stale and any(e.type in STATE_TYPES and e.run_id != self.run_id for e in events):
            self.stale = True

    def take_stale(self) -> bool:
        stale = self.stale or self.hub.degraded
        self.stale = False
        return stale


@dataclass
class StateSync(AbstractCapability[ToolDeps]):
    """Commits the run's state changes after each tool execution."""

    gateway: RunStateGateway

    async def wrap_tool_execute(
        self,
        ctx: RunContext[ToolDeps],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: Any,
        handler: Any,
    ) -> Any:
        ran = False
        try:
            result = await handler(args)
            ran = True
        finally:
            await self.gateway.settle_prediction(call.tool_call_id, ran=ran)
            try:
                await self.gateway.commit()
            except StatePatchRejected as exc:
                raise ModelRetry(
                    f"Your change to the shared state was not applied: {exc.message}. "
                    "The state was changed by someone else meanwhile and has been reloaded; "
                    "read it again before retrying."
                ) from exc
        events, result = take_state_events(result)
        if not events:
            return result
        try:
            version = await self.gateway.apply_events(events)
        except StatePatchRejected as exc:
            raise ModelRetry(
                f"The state your tool returned was not applied: {exc.message}. The shared state "
                "has been reloaded; read it again before retrying."
            ) from exc
        return f"The shared state was updated (version {version})." if result is None else result


async def state_instructions(ctx: RunContext[ToolDeps]) -> str:
    """The "Current shared state" block the model sees on every request (cut when large).

    Adopts the stored state first, so the model sees what clients changed during the run.
    """
    gateway = ctx.deps.state_gateway
    assert isinstance(gateway, RunStateGateway)  # the runs of this server carry theirs
    await gateway.refresh()
    limit = settings.AGUI_STATE_IN_PROMPT_CHARS
    shown = gateway.document.root if settings.AGUI_PRIVATE_STATE_IN_PROMPT else gateway.shared_view()
    text = orjson.dumps(shown, option=orjson.OPT_INDENT_2).decode()
    note = ""
    if len(text) > limit:
        note = f"\n(The state is {len(text)} characters; only the first {limit} are shown.)"
        text = text[:limit]
    return (
        "Current shared state (a JSON document the user sees and edits too; change it with the "
        f"update_state tool or your tools):\n```json\n{text}\n```{note}"
    )
