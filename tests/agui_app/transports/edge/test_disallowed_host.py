"""A request under ``/api/`` whose ``Host`` is not in ``ALLOWED_HOSTS`` is the API's JSON 400
``disallowed_host`` — from DRF views, Django views and the streaming consumers alike, with ``DEBUG``
on or off — while the rest of the site keeps Django's own answer."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db(transaction=True)

EVIL = {"Host": "evil.example"}


def assert_json_disallowed_host(response: Any) -> None:
    assert response.status_code == 400
    assert response["Content-Type"].startswith("application/json"), response.content[:200]
    assert response.json()["error"]["code"] == "disallowed_host"
    assert b"evil.example" not in response.content  # the answer does not echo the header


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/api/v1/agents"),  # a DRF view
        ("POST", "/api/v1/threads"),  # a DRF write
        ("GET", "/api/v1/threads/t/messages"),
        ("GET", "/api/v1/schema"),  # a Django view
        ("GET", "/api/v1/no-such-endpoint"),  # the JSON 404's catch-all
        ("GET", "/api/v1/threads/t/events"),  # the event log (a Channels consumer for SSE, else Django)
        ("POST", "/api/v1/agents/assistant"),  # the AG-UI endpoint, a Channels consumer
    ],
)
async def test_a_disallowed_host_under_api_is_a_json_400(aclient, agent, method: str, path: str) -> None:
    response = await aclient.generic(method, path, "{}", content_type="application/json", headers=EVIL)
    assert_json_disallowed_host(response)


@pytest.mark.parametrize("debug", [False, True])
def test_it_is_json_with_debug_on_or_off(settings, owner_key, debug: bool) -> None:
    settings.DEBUG = debug
    response = Client().get(
        "/api/v1/agents", HTTP_HOST="evil.example", HTTP_AUTHORIZATION=f"Bearer {owner_key}"
    )
    assert_json_disallowed_host(response)


def test_an_allowed_host_is_served_as_before(owner_key) -> None:
    response = Client().get("/api/v1/agents", HTTP_AUTHORIZATION=f"Bearer {owner_key}")
    assert response.status_code == 200


def test_outside_api_the_site_keeps_djangos_answer() -> None:
    response = Client().get("/admin/login/", HTTP_HOST="evil.example")
    assert response.status_code == 400
    assert not response["Content-Type"].startswith("application/json")


def test_a_suspicious_request_a_middleware_refused_is_json_under_api_only(rf) -> None:
    """Django answers a ``SuspiciousOperation`` raised outside any view with ``handler400``."""
    from django.core.exceptions import SuspiciousOperation

    from agui_app.transports.edge.answers import handler400

    api = handler400(rf.get("/api/v1/agents"), SuspiciousOperation("bad"))
    site = handler400(rf.get("/admin/"), SuspiciousOperation("bad"))
    assert api.status_code == 400 and api["Content-Type"] == "application/json"
    assert site.status_code == 400 and not site["Content-Type"].startswith("application/json")
