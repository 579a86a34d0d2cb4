"""How agents talk: tenants and keys, threads, runs, the event log, shared state, conversations."""

from agui_app.models.conversations import ConversationEntry, ConversationRecord
from agui_app.models.feedback import Feedback
from agui_app.models.files import FileReference, StoredFile
from agui_app.models.memory import MemoryItem, MemoryNamespace
from agui_app.models.runs import Event, OnDisconnect, Run, RunStatus
from agui_app.models.schedules import FiringOutcome, Schedule, ScheduleFiring
from agui_app.models.subagents import SubagentRun, SubagentStatus
from agui_app.models.tenancy import ApiKey, KeyScope, Membership, Tenant, TokenRevocation, UsageMonth
from agui_app.models.threads import LoadedCapability, StateRevision, StateSource, Thread
from agui_app.models.webhooks import DeliveryStatus, WebhookDelivery

__all__ = [
    "ApiKey",
    "ConversationEntry",
    "ConversationRecord",
    "DeliveryStatus",
    "Event",
    "Feedback",
    "FileReference",
    "FiringOutcome",
    "KeyScope",
    "LoadedCapability",
    "Membership",
    "MemoryItem",
    "MemoryNamespace",
    "OnDisconnect",
    "Run",
    "RunStatus",
    "Schedule",
    "ScheduleFiring",
    "StateRevision",
    "StateSource",
    "StoredFile",
    "SubagentRun",
    "SubagentStatus",
    "Tenant",
    "Thread",
    "TokenRevocation",
    "UsageMonth",
    "WebhookDelivery",
]
