"""One key set for every secret at rest: webhook signing secrets, MCP server headers and model
credentials' keys all use
``AGUI_SECRETS_KEYS`` (newest first; derived from ``SECRET_KEY`` when unset). A rotation lists the new
key first, ``reencrypt_secrets`` moves every stored value to it, then the old key can go."""

from __future__ import annotations

import base64

import pytest
from cryptography.fernet import Fernet
from django.core.management import CommandError, call_command

from agui_app.models import Tenant
from agui_app.services.webhook_secrets import SecretUnreadable, webhook_secret_rotate, webhook_signing_keys
from capabilities.models import McpServer, ModelCredential
from capabilities.secrets import decrypt, decrypt_mapping
from capabilities.services.mcp_servers import mcp_server_create
from capabilities.services.model_credentials import model_credential_create

pytestmark = pytest.mark.django_db
OLD, NEW = Fernet.generate_key().decode(), Fernet.generate_key().decode()
HEADERS = {"X-Api-Secret": "s3cr3t-header-value"}
PROVIDER_KEY = "sk-provider-key-1f2e3d4c5b6a"


def raw(secret: str) -> bytes:
    return base64.b64decode(secret.removeprefix("whsec_"))


def stored_under(settings, owner_tenant: Tenant) -> tuple[str, McpServer]:
    settings.AGUI_OUTBOUND_ALLOW_PRIVATE = True
    secret, _ = webhook_secret_rotate(tenant=owner_tenant)
    server = mcp_server_create(
        tenant_id=owner_tenant.pk,
        headers=HEADERS,
        server_id="orders",
        description="Order status.",
        url="http://127.0.0.1:9/mcp",
    )
    return secret, server


def provider_key_of(owner_tenant: Tenant) -> str:
    return decrypt(ModelCredential.objects.get(tenant=owner_tenant).api_key_encrypted)


def test_every_kind_of_secret_follows_one_rotation(settings, owner_tenant: Tenant) -> None:
    settings.AGUI_SECRETS_KEYS = [OLD]
    secret, server = stored_under(settings, owner_tenant)
    model_credential_create(
        tenant_id=owner_tenant.pk, credential_id="oai", provider="openai", api_key=PROVIDER_KEY
    )
    settings.AGUI_SECRETS_KEYS = [NEW, OLD]  # the new key first: the old one still decrypts
    assert webhook_signing_keys(tenant_id=owner_tenant.pk) == [raw(secret)]
    assert decrypt_mapping(McpServer.objects.get(pk=server.pk).headers_encrypted) == HEADERS
    assert provider_key_of(owner_tenant) == PROVIDER_KEY
    call_command("reencrypt_secrets")
    settings.AGUI_SECRETS_KEYS = [NEW]  # the old key dropped: everything was moved to the new one
    assert webhook_signing_keys(tenant_id=owner_tenant.pk) == [raw(secret)]
    assert decrypt_mapping(McpServer.objects.get(pk=server.pk).headers_encrypted) == HEADERS
    assert provider_key_of(owner_tenant) == PROVIDER_KEY


def test_without_keys_both_use_the_key_derived_from_secret_key(settings, owner_tenant: Tenant) -> None:
    settings.AGUI_SECRETS_KEYS = []
    secret, server = stored_under(settings, owner_tenant)
    assert webhook_signing_keys(tenant_id=owner_tenant.pk) == [raw(secret)]
    assert decrypt_mapping(server.headers_encrypted) == HEADERS
    model_credential_create(
        tenant_id=owner_tenant.pk, credential_id="oai", provider="openai", api_key=PROVIDER_KEY
    )
    settings.SECRET_KEY = "another secret key, so another derived key"
    with pytest.raises(SecretUnreadable):
        webhook_signing_keys(tenant_id=owner_tenant.pk)
    with pytest.raises(CommandError, match=r"McpServer.*ModelCredential"):
        call_command("reencrypt_secrets")  # says what it cannot read, leaves it as it is
