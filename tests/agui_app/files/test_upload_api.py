"""POST /api/v1/files and the file endpoints: streamed into storage, sniffed, measured, limited,
scoped to the tenant and the end user (DESIGN §21)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from agui_app.models import StoredFile, Tenant
from tests.agui_app.files.conftest import stored_paths
from tests.support.asgi import AsgiClient
from tests.support.files import jpeg, multipart, png, upload

pytestmark = pytest.mark.django_db(transaction=True)
MiB = 1024 * 1024


async def test_an_upload_answers_201_with_its_sniffed_type_size_and_sha256(
    aclient: AsgiClient, files_root: Path
) -> None:
    data = png(64, 48)
    response = await upload(aclient, data, "holiday.jpg")  # the name says jpg: the bytes say png
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["contentType"] == "image/png" and body["size"] == len(data)
    assert body["sha256"] == hashlib.sha256(data).hexdigest() and body["filename"] == "holiday.jpg"
    assert (body["width"], body["height"]) == (64, 48) and body["createdAt"]
    assert body["url"] == f"agui-file://{body['id']}"
    [path] = stored_paths(files_root)
    assert path.read_bytes() == data

    detail = await aclient.get(f"/api/v1/files/{body['id']}")
    assert detail.status_code == 200 and detail.json() == body
    content = await aclient.get(f"/api/v1/files/{body['id']}/content")
    assert content.status_code == 200 and content["Content-Type"] == "image/png"
    assert content.content == data and content["X-Content-Type-Options"] == "nosniff"
    listed = (await aclient.get("/api/v1/files")).json()
    assert [f["id"] for f in listed["results"]] == [body["id"]]


async def test_a_25_mib_upload_is_refused_with_413_and_nothing_is_stored(
    aclient: AsgiClient, files_root: Path
) -> None:
    response = await upload(aclient, b"\x89PNG\r\n\x1a\n" + b"\0" * (25 * MiB))
    assert response.status_code == 413, response.content
    assert response.json()["error"]["code"] in ("payload_too_large", "file_too_large")
    assert stored_paths(files_root) == [] and await StoredFile.objects.acount() == 0


async def test_the_file_limit_is_checked_while_the_bytes_arrive(
    aclient: AsgiClient, files_root: Path, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no declared length to refuse, the sink counts: 413 ``file_too_large`` at the limit."""
    from agui_app.transports.sse import uploads

    settings.AGUI_FILE_MAX_BYTES = 1000
    monkeypatch.setattr(uploads, "ascii_int", lambda raw: None)  # as if the length were not declared
    response = await upload(aclient, b"y" * 1001)
    assert response.status_code == 413 and response.json()["error"]["code"] == "file_too_large"
    assert stored_paths(files_root) == [] and await StoredFile.objects.acount() == 0
    assert (await upload(aclient, b"y" * 1000)).status_code == 201


async def test_the_tenant_quota_is_checked_before_the_body_is_read(
    aclient: AsgiClient, owner_tenant: Tenant, files_root: Path
) -> None:
    await Tenant.objects.filter(pk=owner_tenant.pk).aupdate(file_quota_bytes=3000)
    assert (await upload(aclient, b"a" * 2000, "a.txt")).status_code == 201
    refused = await upload(aclient, b"b" * 2000, "b.txt")
    assert refused.status_code == 413 and refused.json()["error"]["code"] == "file_quota_exceeded"
    assert len(stored_paths(files_root)) == 1 and await StoredFile.objects.acount() == 1


async def test_a_type_outside_the_tenants_list_is_415_and_not_stored(
    aclient: AsgiClient, owner_tenant: Tenant, files_root: Path
) -> None:
    await Tenant.objects.filter(pk=owner_tenant.pk).aupdate(file_allowed_types=["image/png"])
    refused = await upload(aclient, jpeg(), "x.png")
    assert refused.status_code == 415 and refused.json()["error"]["code"] == "file_type_not_allowed"
    assert refused.json()["error"]["details"]["contentType"] == "image/jpeg"
    binary = await upload(aclient, bytes(range(256)) * 4, "blob.bin")
    assert binary.status_code == 415
    assert stored_paths(files_root) == [] and await StoredFile.objects.acount() == 0


async def test_a_body_that_is_not_multipart_or_has_no_file_is_refused(aclient: AsgiClient) -> None:
    wrong = await aclient.post("/api/v1/files", b"hello", content_type="text/plain")
    assert wrong.status_code == 415
    body, content_type = multipart(b"hello", field="other")
    missing = await aclient.post("/api/v1/files", body, content_type=content_type)
    assert missing.status_code == 422 and missing.json()["error"]["code"] == "missing_file"
    assert await StoredFile.objects.acount() == 0


async def test_a_stranger_and_another_end_user_get_404(
    aclient: AsgiClient, stranger_aclient: AsgiClient, alice: AsgiClient, bob: AsgiClient
) -> None:
    tenant_file = (await upload(aclient, png())).json()["id"]
    alices = (await upload(alice, png(10, 10))).json()["id"]
    for client, file_id in ((stranger_aclient, tenant_file), (stranger_aclient, alices), (bob, alices)):
        for path in (f"/api/v1/files/{file_id}", f"/api/v1/files/{file_id}/content"):
            assert (await client.get(path)).status_code == 404
        assert (await client.delete(f"/api/v1/files/{file_id}")).status_code == 404
    assert (await bob.get(f"/api/v1/files/{tenant_file}")).status_code == 404  # not bob's either
    assert [f["id"] for f in (await bob.get("/api/v1/files")).json()["results"]] == []
    assert (await alice.get(f"/api/v1/files/{alices}")).status_code == 200
    assert (await aclient.get(f"/api/v1/files/{alices}")).status_code == 200  # the tenant's key sees all
    assert (await aclient.get("/api/v1/files/not-a-uuid")).status_code == 404


async def test_no_key_is_401_before_the_body(client_without_key: AsgiClient) -> None:
    assert (await upload(client_without_key, png())).status_code == 401


async def test_delete_removes_the_row_and_the_bytes(aclient: AsgiClient, files_root: Path) -> None:
    file_id = (await upload(aclient, png())).json()["id"]
    assert len(stored_paths(files_root)) == 1
    assert (await aclient.delete(f"/api/v1/files/{file_id}")).status_code == 204
    assert stored_paths(files_root) == [] and await StoredFile.objects.acount() == 0
    assert (await aclient.get(f"/api/v1/files/{file_id}")).status_code == 404


def test_an_upload_has_its_own_body_timeout(settings: Any) -> None:
    from agui_app.transports.edge.guard import body_timeout

    settings.AGUI_FILE_UPLOAD_TIMEOUT_SECONDS = 300
    settings.AGUI_BODY_TIMEOUT_SECONDS = 30
    assert body_timeout("/api/v1/files") == 300 and body_timeout("/api/v1/threads") == 30
