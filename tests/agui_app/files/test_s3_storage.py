"""The same files API and input parts with ``AGUI_FILES_STORAGE=s3``: django-storages' S3 backend
against a real S3 endpoint on loopback (moto's server), over HTTP through boto3 — no mock object."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from agui_app.models import StoredFile
from capabilities.models import Agent
from tests.support.asgi import AsgiClient
from tests.support.files import image_part, png, upload
from tests.support.http import text_of
from tests.support.inputs import run_input
from tests.support.runs import run

pytestmark = pytest.mark.django_db(transaction=True)
MiB = 1024 * 1024


def with_image(text: str, file_id: str) -> dict[str, Any]:
    return {
        "id": f"u-{uuid.uuid4().hex[:12]}",
        "role": "user",
        "content": [{"type": "text", "text": text}, image_part(file_id)],
    }


async def test_an_upload_lands_in_the_bucket_and_reaches_demo_in_two_runs(
    aclient: AsgiClient, agent: Agent, s3_endpoint: Any, s3_bucket: str
) -> None:
    data = png(120, 80)
    created = await upload(aclient, data)
    assert created.status_code == 201, created.content
    file_id = created.json()["id"]
    stored = await StoredFile.objects.aget(pk=file_id)
    assert s3_endpoint.keys(s3_bucket) == [stored.storage_name]
    body = s3_endpoint.client().get_object(Bucket=s3_bucket, Key=stored.storage_name)["Body"].read()
    assert body == data
    content = await aclient.get(f"/api/v1/files/{file_id}/content")
    assert content.status_code == 200 and content.content == data
    for thread in ("t-s3-a", "t-s3-b"):
        frames = await run(aclient, "assistant", run_input(thread, [with_image("what is it?", file_id)]))
        assert text_of(frames) == f"I received 1 file: image/png, {len(data)} bytes, 120x80 pixels."
    assert (await aclient.delete(f"/api/v1/files/{file_id}")).status_code == 204
    assert s3_endpoint.keys(s3_bucket) == []


async def test_a_25_mib_upload_is_refused_and_nothing_reaches_the_bucket(
    aclient: AsgiClient, s3_endpoint: Any, s3_bucket: str
) -> None:
    response = await upload(aclient, b"\x89PNG\r\n\x1a\n" + b"\0" * (25 * MiB))
    assert response.status_code == 413
    assert s3_endpoint.keys(s3_bucket) == [] and await StoredFile.objects.acount() == 0
