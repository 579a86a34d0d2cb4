"""The API of tenants' model credentials (docs/design.md §24): ``/api/v1/model-credentials`` and ``/{id}``.

Bodies ``{"id", "provider": "openai" | "anthropic" | "openai-compatible", "apiKey", "baseUrl"?}``.
``apiKey`` is write-only: answers carry ``apiKeyHint`` (its last characters, for keys long enough) and
``usedBy`` (the agents whose model or fallback models use it), never the key. Every method needs an
``admin`` key. Thin views over ``capabilities.services.model_credentials``.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from agui_app.access import Scope
from agui_app.errors import Conflict, Unprocessable
from agui_app.selectors.registry import model_credential_or_404
from agui_app.transports.rest.base import ErrorSerializer, page_of
from agui_app.transports.rest.policies import ScopeRequired
from agui_app.transports.rest.registry.base import RegistryAPIView
from capabilities.models import ModelCredential, ModelProvider
from capabilities.models_catalog import agents_using
from capabilities.selectors import model_credentials_for_tenant
from capabilities.services.model_credentials import (
    MAX_API_KEY_CHARS,
    ModelCredentialInUse,
    ModelCredentialRejected,
    model_credential_create,
    model_credential_delete,
    model_credential_update,
)
from capabilities.skills import SKILL_ID_PATTERN

TAGS = ["registry"]
ERRORS = {
    code: OpenApiResponse(ErrorSerializer, description=why)
    for code, why in (
        ("401", "no or bad key"),
        ("403", "the key is not an admin key (insufficient_scope)"),
        ("404", "no such credential (or another tenant's)"),
        ("409", "delete: agents use the credential (credential_in_use, details.agents)"),
        ("413", "body too large"),
        ("422", "a field breaks a rule: details.fields names each (never the key)"),
    )
}
FIELD_NAMES = {"credential_id": "id", "api_key": "apiKey", "base_url": "baseUrl"}
ADMIN_ONLY = {method: Scope.ADMIN for method in ("GET", "POST", "PATCH", "DELETE")}


class ModelCredentialSerializer(serializers.Serializer):
    """A model credential. In: ``POST`` (``id``, ``provider``, ``apiKey`` required; ``baseUrl`` required for
    ``openai-compatible``) and ``PATCH`` (``apiKey`` and/or ``baseUrl``)."""

    id = serializers.RegexField(SKILL_ID_PATTERN, max_length=64, source="credential_id")
    provider = serializers.ChoiceField(choices=ModelProvider.choices)
    apiKey = serializers.CharField(
        source="api_key",
        max_length=MAX_API_KEY_CHARS,
        write_only=True,
        help_text="The provider's API key; stored encrypted, never shown back.",
    )
    baseUrl = serializers.CharField(
        source="base_url",
        max_length=2000,
        required=False,
        allow_blank=True,
        help_text="The API's base URL, e.g. https://llm.example.com/v1 (empty: the provider's own). "
        "Called under the outbound rule: no private, loopback or link-local address.",
    )
    apiKeyHint = serializers.CharField(
        source="api_key_hint", read_only=True, help_text="The key's last 4 characters (keys of 16 or more)."
    )
    usedBy = serializers.SerializerMethodField(help_text="Slugs of the agents whose model uses it.")
    createdAt = serializers.DateTimeField(source="created_at", read_only=True)
    updatedAt = serializers.DateTimeField(source="updated_at", read_only=True)

    @extend_schema_field(serializers.ListField(child=serializers.CharField()))
    def get_usedBy(self, credential: ModelCredential) -> list[str]:
        return [agent.slug for agent in agents_using(credential)]


def body(credential: ModelCredential) -> dict[str, Any]:
    return ModelCredentialSerializer(credential).data


def refusal(exc: ModelCredentialRejected) -> Unprocessable:
    fields = {FIELD_NAMES.get(field, field): messages for field, messages in exc.errors.items()}
    return Unprocessable(
        "The model credential is invalid; nothing was saved.",
        code="invalid_model_credential",
        details={"fields": fields},
    )


class CredentialsView(RegistryAPIView):
    """Admin keys only, for reading too: which providers a tenant pays for is configuration."""

    permission_classes = [ScopeRequired]
    required_scopes = ADMIN_ONLY


class ModelCredentialListView(CredentialsView):
    @extend_schema(
        tags=TAGS,
        operation_id="model_credentials_list",
        summary="The tenant's model credentials",
        responses={200: page_of(ModelCredentialSerializer), **ERRORS},
    )
    def get(self, request: Request) -> Response:
        return self.paginate(request, model_credentials_for_tenant(request.auth.pk), body)

    @extend_schema(
        tags=TAGS,
        operation_id="model_credentials_create",
        summary="Add a model credential",
        description="Agents then name it in their `model`: `openai-compatible:<id>:<model name>`, or "
        "`openai-chat:<model>` / `anthropic:<model>` for the tenant's `openai` / `anthropic` credential.",
        request=ModelCredentialSerializer,
        responses={201: ModelCredentialSerializer, **ERRORS},
    )
    def post(self, request: Request) -> Response:
        data = ModelCredentialSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            credential = model_credential_create(tenant_id=request.auth.pk, **data.validated_data)
        except ModelCredentialRejected as exc:
            raise refusal(exc) from exc
        return Response(body(credential), status=201)


class ModelCredentialDetailView(CredentialsView):
    def credential(self, request: Request, credential_id: str) -> ModelCredential:
        return model_credential_or_404(request.auth.pk, credential_id)

    @extend_schema(
        tags=TAGS,
        operation_id="model_credentials_retrieve",
        summary="A model credential",
        responses={200: ModelCredentialSerializer, **ERRORS},
    )
    def get(self, request: Request, credential_id: str) -> Response:
        return Response(body(self.credential(request, credential_id)))

    @extend_schema(
        tags=TAGS,
        operation_id="model_credentials_update",
        summary="Replace a credential's key or base URL",
        description="`apiKey` and/or `baseUrl`; `id` and `provider` cannot change. Runs that start "
        "afterwards use the new values.",
        request=ModelCredentialSerializer(partial=True),
        responses={200: ModelCredentialSerializer, **ERRORS},
    )
    def patch(self, request: Request, credential_id: str) -> Response:
        credential = self.credential(request, credential_id)
        data = ModelCredentialSerializer(credential, data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        try:
            credential = model_credential_update(credential=credential, **data.validated_data)
        except ModelCredentialRejected as exc:
            raise refusal(exc) from exc
        return Response(body(credential))

    @extend_schema(
        tags=TAGS,
        operation_id="model_credentials_destroy",
        summary="Delete a model credential",
        description="Refused (409 `credential_in_use`, `details.agents`) while agents use it.",
        responses={204: None, **ERRORS},
    )
    def delete(self, request: Request, credential_id: str) -> Response:
        try:
            model_credential_delete(credential=self.credential(request, credential_id))
        except ModelCredentialInUse as exc:
            raise Conflict(str(exc), code="credential_in_use", details={"agents": exc.agents}) from exc
        return Response(status=204)
