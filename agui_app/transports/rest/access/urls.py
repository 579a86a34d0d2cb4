"""URLs of the tenant's own endpoints under ``/api/v1/``: the tenant, its signing secrets, user
tokens and usage."""

from django.urls import path

from agui_app.transports.rest.access import tenant, tokens

urlpatterns = [
    path("tenant", tenant.TenantView.as_view(), name="tenant"),
    path("tenant/token-secret", tenant.TokenSecretView.as_view(), name="tenant-token-secret"),
    path("tenant/webhook-secret", tenant.WebhookSecretView.as_view(), name="tenant-webhook-secret"),
    path("tokens", tokens.TokenView.as_view(), name="tokens"),
    path("tokens/revoke", tokens.TokenRevokeView.as_view(), name="tokens-revoke"),
    path("usage", tenant.UsageView.as_view(), name="usage"),
]
