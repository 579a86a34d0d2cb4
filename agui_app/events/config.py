"""The control message that keeps every process's configuration caches true (``runtime.warm``)."""

from __future__ import annotations

from django.db import transaction

from agui_app.events.hub import PROCESS_CONTROL_HANDLERS, broadcast_control
from agui_app.process import PROCESS_ID

CONFIG_CHANGED = "agui.config_changed"


def config_changed(tenant_id: int | None) -> None:
    """Tell every process to drop what it caches of the tenant's configuration (``None``: of every
    tenant; ``runtime.warm``): this process at once and again once the current transaction commits
    (a read in between cannot keep the old value), the others after the commit. Any thread."""
    message = {"type": CONFIG_CHANGED, "tenant": tenant_id, "origin": PROCESS_ID}
    for handler in PROCESS_CONTROL_HANDLERS:
        handler(message)
    transaction.on_commit(lambda: broadcast_control({"type": CONFIG_CHANGED, "tenant": tenant_id}))
