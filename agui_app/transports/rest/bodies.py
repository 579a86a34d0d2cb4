"""Documented bodies of the thread endpoints (drf-spectacular only): the views build plain dicts
(``serializers``), these say what those dicts hold. AG-UI's own types (messages, the capabilities
document) are referenced from the pydantic schemas ``openapi`` adds to the components."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from agui_app.models import RunStatus, StateSource
from agui_app.transports.rest.openapi.parts import component_ref


class RunUsageBody(serializers.Serializer):
    requests = serializers.IntegerField()
    inputTokens = serializers.IntegerField()
    outputTokens = serializers.IntegerField()


class RunErrorInfo(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()


class RunBody(serializers.Serializer):
    runId = serializers.CharField()
    status = serializers.ChoiceField(choices=RunStatus.choices)
    startedAt = serializers.DateTimeField(allow_null=True)
    finishedAt = serializers.DateTimeField(allow_null=True)
    agentVersion = serializers.IntegerField(
        allow_null=True,
        help_text="the agent's version the run ran with (GET /api/v1/agents/{agent}/versions)",
    )
    usage = RunUsageBody()
    parentRunId = serializers.CharField(required=False)
    outcome = serializers.DictField(required=False, help_text="AG-UI RUN_FINISHED outcome")
    error = RunErrorInfo(required=False)
    cancelRequested = serializers.BooleanField(required=False)


class SubagentRunBody(serializers.Serializer):
    """One sub-agent invocation of a run (docs/concepts/subagents.md)."""

    subagentRunId = serializers.CharField()
    agent = serializers.CharField(help_text="the sub-agent's slug")
    depth = serializers.IntegerField(help_text="1: delegated by the run's agent; 2: by a sub-agent; …")
    task = serializers.CharField(allow_blank=True)
    status = serializers.CharField(
        help_text="running, succeeded, suspended, failed, cancelled or interrupted"
    )
    result = serializers.JSONField(allow_null=True, help_text="its final answer")
    usage = RunUsageBody()
    loadedCapabilities = serializers.ListField(child=serializers.CharField())
    messages = serializers.ListField(
        child=serializers.DictField(),
        help_text="the AG-UI messages of its events, each with its subagentRunId",
    )
    startedAt = serializers.DateTimeField()
    finishedAt = serializers.DateTimeField(allow_null=True)
    parentSubagentRunId = serializers.CharField(required=False)
    parentToolCallId = serializers.CharField(required=False)
    error = RunErrorInfo(required=False)
    interruptIds = serializers.ListField(child=serializers.CharField(), required=False)


class RunDetailBody(RunBody):
    subagents = SubagentRunBody(many=True, help_text="its sub-agent invocations, oldest first")


class HandoffBody(serializers.Serializer):
    to = serializers.CharField()
    note = serializers.CharField(allow_blank=True)
    runId = serializers.CharField()
    toolCallId = serializers.CharField(required=False)
    at = serializers.DateTimeField()

    def get_fields(self) -> dict[str, serializers.Field]:
        fields = super().get_fields()
        return {"from": serializers.CharField(), **fields}  # "from" is a keyword


class ThreadSummaryBody(serializers.Serializer):
    threadId = serializers.CharField()
    agent = serializers.CharField()
    user = serializers.CharField(allow_null=True)
    title = serializers.CharField(allow_blank=True)
    metadata = serializers.DictField()
    version = serializers.IntegerField(help_text="the shared state's version")
    lastSeq = serializers.IntegerField(help_text="the last event's seq (the thread's cursor)")
    createdAt = serializers.DateTimeField()
    updatedAt = serializers.DateTimeField()


class LoadedCapabilityBody(serializers.Serializer):
    id = serializers.CharField()
    skillVersion = serializers.IntegerField(allow_null=True)
    runId = serializers.CharField(allow_null=True)
    loadedAt = serializers.DateTimeField(allow_null=True)
    available = serializers.BooleanField(help_text="still enabled on the agent")


class ThreadDetailBody(ThreadSummaryBody):
    state = serializers.DictField()
    status = serializers.ChoiceField(choices=["running", "idle"])
    activeRunId = serializers.CharField(allow_null=True)
    loadedCapabilities = LoadedCapabilityBody(many=True)
    handoffs = HandoffBody(many=True, help_text="each handoff that changed its agent, oldest first")


@extend_schema_field(component_ref("AguiMessage"))
class AguiMessageField(serializers.DictField):
    """An AG-UI message (``ag_ui.core.Message``, camelCase)."""


class ThreadMessagesBody(serializers.Serializer):
    threadId = serializers.CharField()
    messages = serializers.ListField(child=AguiMessageField())
    next = serializers.CharField(
        allow_null=True,
        help_text="the id of the page's last message when more follow (the next `after`), else null",
    )


class ThreadStateBody(serializers.Serializer):
    state = serializers.DictField()
    version = serializers.IntegerField(help_text='also the ETag: "<version>"')


class StatePutInput(serializers.Serializer):
    state = serializers.DictField()


class JsonPatchOperation(serializers.Serializer):
    op = serializers.ChoiceField(choices=["add", "remove", "replace", "move", "copy", "test"])
    path = serializers.CharField(help_text="a JSON Pointer (RFC 6901)")
    value = serializers.JSONField(required=False)
    from_ = serializers.CharField(required=False, help_text="move / copy: the source pointer")

    def get_fields(self) -> dict[str, serializers.Field]:
        fields = super().get_fields()
        fields["from"] = fields.pop("from_")  # a Python keyword
        return fields


class StateRevisionBody(serializers.Serializer):
    version = serializers.IntegerField()
    patch = serializers.ListField(child=serializers.DictField(), help_text="RFC 6902 operations")
    source = serializers.ChoiceField(  # type: ignore[assignment]  # the field "source", not Field.source
        choices=StateSource.choices
    )
    runId = serializers.CharField(allow_null=True)
    createdAt = serializers.DateTimeField()
    snapshot = serializers.DictField(
        required=False,
        help_text="only on the oldest revision listed, once retention folded older ones away: the whole "
        "state at this version (then each later patch rebuilds the next version)",
    )


class FileBody(serializers.Serializer):
    id = serializers.UUIDField()
    filename = serializers.CharField(allow_blank=True)
    contentType = serializers.CharField(help_text="sniffed from the bytes")
    size = serializers.IntegerField()
    sha256 = serializers.CharField()
    createdAt = serializers.DateTimeField()
    url = serializers.CharField(help_text="`agui-file://{id}`: how an input part names it")
    width = serializers.IntegerField(required=False, help_text="images only")
    height = serializers.IntegerField(required=False, help_text="images only")
