"""A method a path does not take is a 405, and every 405 says which methods the path takes (``Allow``): each documented path, each method it
does not document, in-process through the project's ASGI application (Channels consumers, async
Django views and DRF views alike)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db(transaction=True)

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")


def documented() -> dict[str, set[str]]:
    response = Client().get("/api/v1/schema", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    return {
        re.sub(r"\{[^}]+\}", "1", path): {m.upper() for m in item if m.upper() in METHODS}
        for path, item in response.json()["paths"].items()
    }


async def test_every_405_carries_an_allow_header_with_the_documented_methods(aclient: Any) -> None:
    from asgiref.sync import sync_to_async

    paths = await sync_to_async(documented)()
    assert len(paths) > 30
    refused = []
    for path, methods in paths.items():
        for method in sorted(set(METHODS) - methods):
            response = await aclient.generic(method, path, content_type="application/json")
            assert response.status_code == 405, (method, path, response.status_code)
            allow = {m.strip() for m in response.headers.get("allow", "").split(",") if m.strip()}
            refused.append((method, path))
            assert methods <= allow, (method, path, response.headers.get("allow"))
    assert len(refused) > 100
