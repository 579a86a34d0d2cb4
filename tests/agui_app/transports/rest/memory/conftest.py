"""Clients of the memory API: the owner's admin key (``api``), a runtime key, alice's and bob's user
tokens, and the stranger's key (``stranger_api``, from the root conftest)."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from agui_app.models import KeyScope, Tenant
from agui_app.services.keys import api_key_create
from tests.conftest import user_token


def client_with(credential: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {credential}")
    return client


@pytest.fixture
def runtime_api(owner_tenant: Tenant) -> APIClient:
    return client_with(api_key_create(tenant=owner_tenant, name="backend", scope=KeyScope.RUNTIME))


@pytest.fixture
def alice_api(owner_tenant: Tenant) -> APIClient:
    return client_with(user_token(owner_tenant, "alice"))


@pytest.fixture
def bob_api(owner_tenant: Tenant) -> APIClient:
    return client_with(user_token(owner_tenant, "bob"))
