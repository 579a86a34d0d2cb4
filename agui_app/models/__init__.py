"""How agents talk: tenants and keys, threads, runs, the event log, shared state, conversations."""

from agui_app.models.conversations import ConversationEntry, ConversationRecord
from agui_app.models.runs import Event, Run, RunStatus
from agui_app.models.tenancy import ApiKey, Membership, Tenant
from agui_app.models.threads import LoadedCapability, StateRevision, StateSource, Thread

__all__ = [
    "ApiKey",
    "ConversationEntry",
    "ConversationRecord",
    "Event",
    "LoadedCapability",
    "Membership",
    "Run",
    "RunStatus",
    "StateRevision",
    "StateSource",
    "Tenant",
    "Thread",
]
