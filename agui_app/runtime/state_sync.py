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
from agui_app.events.shape import LoggedEvent, encode, intervention
from agui_app.models import StateSource
from agui_app.runtime.declarative import StateEvent, event_ops, take_state_events
from agui_app.runtime.interventions import (
    alogged_messages,
    describe_message,
    describe_state_change,
    message_for,
    state_change_ops,
)
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
        self.interventions: list[str] = []  # what the model was told people changed, oldest first
        self.heard: set[int] = set()  # the seqs of the intervention messages taken

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

    async def refresh(self, *, tell: bool = True) -> None:
        """Adopt the stored state if another writer changed it since this run last saw it (read
        only when the run's ``StateWatch`` saw a change, or cannot tell). A change a person made
        (not another run) is an intervention: the model is told what changed, and it is logged
        (``tell=False``: the run's end, when no model request follows — only adopt it)."""
        watcher = self.watcher
        if watcher is not None and not watcher.take_stale():
            return
        async with self.lock:
            stored = await astored_state_if_newer(thread_pk=self.thread_pk, version=self.version)
            if stored is None:
                return
            before = self.shared_view()
            state, self.version = stored
            self.document.adopt(self._merged(state))
            if not tell or (watcher is not None and not watcher.take_human()):
                return  # another run's writes only, or nobody is left to tell
            ops = state_change_ops(before, self.shared_view())
            if ops:
                self.interventions.append(describe_state_change(self.version, ops))
                value = {"kind": "state", "phase": "delivered", "runId": self.run_id, "version": self.version}
                await self.writer.add(intervention({**value, "patch": ops[:100]}))

    async def take_interventions(self) -> list[str]:
        """Everything people changed during the run so far, described for the model (state changes
        and messages since the last model request are taken now, and logged as delivered)."""
        await self.refresh()
        watcher = self.watcher
        if watcher is None:
            return self.interventions
        messages = watcher.take_messages()
        if watcher.take_missed():  # a queued run (``since`` unknown) reads its thread's from the start
            messages += await alogged_messages(self.thread_pk, self.run_id, watcher.since or 0)
        for seq, value in sorted(messages, key=lambda item: item[0]):
            if seq in self.heard:
                continue
            self.heard.add(seq)
            self.interventions.append(describe_message(value))
            delivered = {"kind": "message", "phase": "delivered", "runId": self.run_id, "seq": seq}
            await self.writer.add(intervention(delivered))
        return self.interventions

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
    """A run's watch on its thread: the hub hands it every event logged on the thread, and it notes
    whether a state change of another writer (a client, the API, another run) came — so the run reads
    the stored state before a model request only then — whether one came from a person (outside any
    run: an intervention), and the intervention messages sent to the run.

    It says "stale" (and "missed") when it cannot tell: before it was told which run it watches for,
    after a gap in the seqs it saw (``since`` is the last seq the run's admission logged: anything
    logged between the admission and this subscription shows as a gap once the run's own events
    come), and while the channel layer is down (other processes' events do not reach this hub then)."""

    run_id: str | None = None
    stale = True
    human = True  # a state change from outside any run came (or it cannot tell)
    missed = True  # events may have passed it by: read the log for intervention messages
    since: int | None = None  # the run's admission's last seq (None: unknown)
    last_seq: int | None = None

    def __init__(self, hub: Any, key: str, limit: int) -> None:
        super().__init__(hub, key, limit)
        self.messages: list[tuple[int, dict[str, Any]]] = []  # (seq, value) of messages for the run

    def begin(self, *, run_id: str, since: int | None) -> None:
        """Watch for run ``run_id``, admitted with its last event at seq ``since`` (None: the run is
        not open yet; it reads what it needs when it opens)."""
        self.run_id, self.since, self.last_seq = run_id, since, since
        opened = since is not None
        self.stale = self.human = self.missed = not opened

    def push(self, events: Sequence[LoggedEvent]) -> None:
        for event in events:
            if self.last_seq is not None:
                if event.seq > self.last_seq + 1:
                    self.missed = self.stale = self.human = True
                self.last_seq = max(self.last_seq, event.seq)
            if event.type in STATE_TYPES and event.run_id != self.run_id:
                self.stale = True
                if event.run_id is None:
                    self.human = True
            elif event.run_id is None and event.type == "CUSTOM":
                value = message_for(event, self.run_id)
                if value is not None:
                    self.messages.append((event.seq, value))

    def take_stale(self) -> bool:
        stale = self.stale or self.hub.degraded
        self.stale = False
        return stale

    def take_human(self) -> bool:
        human = self.human or self.hub.degraded
        self.human = False
        return human

    def take_missed(self) -> bool:
        missed = self.missed or self.hub.degraded
        self.missed = False
        return missed

    def take_messages(self) -> list[tuple[int, dict[str, Any]]]:
        messages, self.messages = self.messages, []
        return messages


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


async def intervention_instructions(ctx: RunContext[ToolDeps]) -> str:
    """The instruction part naming what people changed during the run (empty while nobody did); the
    run's earlier interventions stay in it for the rest of the run, latest last."""
    gateway = ctx.deps.state_gateway
    assert isinstance(gateway, RunStateGateway)  # the runs of this server carry theirs
    told = await gateway.take_interventions()
    if not told:
        return ""
    lines = "\n".join(f"{i}. {line}" for i, line in enumerate(told, 1))
    return (
        "While you were working on this request, a person intervened (the latest takes precedence; "
        "follow it from your next step on, and do not redo what it made unnecessary):\n" + lines
    )
