"""Runs' closing ``MESSAGES_SNAPSHOT`` events, held in memory for their streams instead of being
logged (see ``runtime.run_messages``). A run that ends without running (a queued run cancelled,
a stale run recovered) holds ``NOTHING``: it changed no history its client lacks."""

from __future__ import annotations

import threading
import time
import uuid
from collections import OrderedDict

from agui_app.events.shape import PendingEvent

HOLD_SECONDS = 60.0  # a stream that sees its run end later than this reads the store instead
HOLD_MAX = 128  # runs held at once (each entry is one run's history, encoded)
NOTHING = PendingEvent(type="", data="")  # held: the client holds the stored history already


class HeldSnapshots:
    """Closing snapshots by (thread, run id), for this process's streams; safe across threads
    (the run's closing transaction holds its entry from a database thread)."""

    def __init__(self) -> None:
        self.entries: OrderedDict[tuple[str, str], tuple[float, PendingEvent]] = OrderedDict()
        self.lock = threading.Lock()

    def hold(self, thread_pk: uuid.UUID, run_id: str, event: PendingEvent | None) -> None:
        now = time.monotonic()
        with self.lock:
            self.entries[(str(thread_pk), run_id)] = (now, event or NOTHING)
            while self.entries:
                key, (held_at, _) = next(iter(self.entries.items()))
                if len(self.entries) <= HOLD_MAX and now - held_at < HOLD_SECONDS:
                    break
                del self.entries[key]

    def get(self, thread_pk: uuid.UUID, run_id: str) -> PendingEvent | None:
        """The held snapshot (``NOTHING`` when none is due), or ``None`` when this process holds none.
        Not removed: every stream of the run reads it (the entry expires)."""
        with self.lock:
            entry = self.entries.get((str(thread_pk), run_id))
        return entry[1] if entry is not None else None


HELD = HeldSnapshots()
