"""HTTPS deployment hardens from the environment (HSTS, SSL redirect, Secure cookies, the proxy's
header: ``check --deploy`` has nothing left to say), and an API key made in admin is shown on the
response page only — never in Django's ``messages`` cookie (signed, but readable), the session or a
cached page."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.contrib.sessions.models import Session
from django.test import Client
from django.urls import reverse

from agui_app.models import ApiKey, Tenant
from agui_app.services.keys import api_key_create, key_principal
from tests.support.servers import start_server

ROOT = Path(__file__).resolve().parents[2]
DEPLOY_WARNINGS = ["security.W004", "security.W008", "security.W012", "security.W016"]
HARDENED = {
    "SECURE_SSL_REDIRECT": "1",
    "SECURE_HSTS_SECONDS": "31536000",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS": "1",
    "SECURE_HSTS_PRELOAD": "1",
    "SESSION_COOKIE_SECURE": "true",
    "CSRF_COOKIE_SECURE": "yes",
    "SECURE_PROXY_SSL_HEADER": "HTTP_X_FORWARDED_PROTO,https",
}


def check_deploy(**env: str) -> subprocess.CompletedProcess[str]:
    clean = {
        k: v for k, v in os.environ.items() if not k.startswith(("SECURE_", "SESSION_", "CSRF_", "DJANGO_"))
    }
    clean |= {
        "SECRET_KEY": "x" * 20 + "a-long-random-enough-secret-for-the-deploy-check-0123456789",
        "DEBUG": "0",
        "ALLOWED_HOSTS": "hub.example",
        "AGUI_ENV_FILE": "/nonexistent/.env",
        **env,
    }
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy"],
        cwd=ROOT,
        env=clean,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_check_deploy_names_what_the_environment_left_off() -> None:
    result = check_deploy()
    output = result.stdout + result.stderr
    assert [code for code in DEPLOY_WARNINGS if code in output] == DEPLOY_WARNINGS


def test_the_environment_hardens_every_deploy_setting() -> None:
    result = check_deploy(**HARDENED)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert re.findall(r"security\.W\d+", output) == []


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("SECURE_PROXY_SSL_HEADER", "X_FORWARDED_PROTO,https"),  # not a request.META name
        ("SECURE_PROXY_SSL_HEADER", "HTTP_X_FORWARDED_PROTO"),  # no value
        ("SECURE_PROXY_SSL_HEADER", "HTTP_A,b,c"),
        ("SECURE_SSL_REDIRECT", "maybe"),
        ("SECURE_HSTS_SECONDS", "a year"),
    ],
)
def test_a_malformed_value_stops_start_up_with_its_name(name: str, value: str) -> None:
    result = check_deploy(**{name: value})
    assert result.returncode != 0
    assert name in result.stderr


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_hardened_server_redirects_http_and_marks_https_responses(tmp_path: Any) -> None:
    server = start_server(tmp_path, extra_env={**HARDENED, "DEBUG": "0", "ALLOWED_HOSTS": "127.0.0.1"})
    try:
        plain = httpx.get(f"{server.url}/admin/login/", follow_redirects=False)
        assert plain.status_code == 301 and plain.headers["location"].startswith("https://127.0.0.1")
        proxied = httpx.get(f"{server.url}/admin/login/", headers={"X-Forwarded-Proto": "https"})
        assert proxied.status_code == 200
        assert proxied.headers["strict-transport-security"] == "max-age=31536000; includeSubDomains; preload"
        assert "secure" in proxied.headers["set-cookie"].lower()  # the CSRF cookie
    finally:
        server.stop()


# --- a key made in admin ------------------------------------------------------------------


@pytest.fixture
def admin_client(client: Client, member: Any) -> Client:
    client.force_login(member)
    return client


def assert_kept_out_of_cookies_and_sessions(response: Any, raw: str) -> None:
    cookies = " ".join(morsel.value for morsel in response.cookies.values())
    assert raw not in cookies and raw.split("_")[-1] not in cookies
    assert "messages" not in response.cookies or not response.cookies["messages"].value
    for session in Session.objects.all():
        assert raw not in str(session.get_decoded())
    assert "no-store" in response["Cache-Control"]


def shown_keys(response: Any) -> list[str]:
    return re.findall(r'<code class="agui-new-key">(agui_[^<]+)</code>', response.content.decode())


@pytest.mark.django_db
@pytest.mark.parametrize("scope", ["admin", "runtime"])
def test_a_key_added_in_admin_is_shown_on_the_page_and_nowhere_else(
    admin_client: Client, owner_tenant: Tenant, scope: str
) -> None:
    response = admin_client.post(
        reverse("admin:agui_app_apikey_add"), {"tenant": owner_tenant.pk, "name": "ci", "scope": scope}
    )
    assert response.status_code == 200
    [raw] = shown_keys(response)
    assert key_principal(raw).tenant == owner_tenant
    assert_kept_out_of_cookies_and_sessions(response, raw)
    later = admin_client.get(reverse("admin:agui_app_apikey_changelist"))
    assert raw not in later.content.decode()  # shown once
    assert ApiKey.objects.filter(tenant=owner_tenant, name="ci").count() == 1


@pytest.mark.django_db
@pytest.mark.parametrize("count", [1, 3])
def test_keys_rotated_in_admin_are_shown_on_the_page_and_nowhere_else(
    admin_client: Client, owner_tenant: Tenant, count: int
) -> None:
    for number in range(count):
        api_key_create(tenant=owner_tenant, name=f"web-{number}")
    selected = list(ApiKey.objects.filter(tenant=owner_tenant).values_list("pk", flat=True))
    response = admin_client.post(
        reverse("admin:agui_app_apikey_changelist"), {"action": "rotate", "_selected_action": selected}
    )
    assert response.status_code == 200
    shown = shown_keys(response)
    assert len(shown) == count and all(key_principal(raw) is not None for raw in shown)
    for raw in shown:
        assert_kept_out_of_cookies_and_sessions(response, raw)
    assert ApiKey.objects.filter(tenant=owner_tenant, replaced_by__isnull=False).count() == count
