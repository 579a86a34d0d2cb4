"""Retention: files no thread references are deleted — row and bytes — past the tenant's period;
referenced ones stay until their threads go (DESIGN §21)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from agui_app.models import StoredFile, Tenant, Thread
from agui_app.services.file_jobs import file_retention
from agui_app.services.file_retention import files_expire
from capabilities.models import Agent
from tests.agui_app.files.conftest import stored_paths
from tests.support.asgi import AsgiClient
from tests.support.files import image_part, png, upload
from tests.support.inputs import run_input
from tests.support.runs import run

pytestmark = pytest.mark.django_db(transaction=True)


async def test_unreferenced_files_go_after_the_period_and_referenced_ones_stay(
    aclient: AsgiClient, agent: Agent, files_root: Path, owner_tenant: Tenant
) -> None:
    kept = (await upload(aclient, png(8, 8))).json()["id"]
    loose = (await upload(aclient, png(9, 9))).json()["id"]
    message = {"id": "u-1", "role": "user", "content": [{"type": "text", "text": "hi"}, image_part(kept)]}
    await run(aclient, "assistant", run_input("t-ret", [message]))
    old = timezone.now() - timedelta(days=8)
    await StoredFile.objects.aupdate(created_at=old)

    from asgiref.sync import sync_to_async

    assert await sync_to_async(files_expire)() == 1
    assert [str(pk) async for pk in StoredFile.objects.values_list("pk", flat=True)] == [kept]
    assert len(stored_paths(files_root)) == 1
    assert (await aclient.get(f"/api/v1/files/{loose}")).status_code == 404

    await Thread.objects.filter(thread_id="t-ret").adelete()  # its history goes: the file is loose now
    await Tenant.objects.filter(pk=owner_tenant.pk).aupdate(file_retention_days=0)  # 0: forever
    assert await sync_to_async(files_expire)() == 0
    await Tenant.objects.filter(pk=owner_tenant.pk).aupdate(file_retention_days=30)
    assert await sync_to_async(files_expire)() == 0  # 8 days old: within 30
    await Tenant.objects.filter(pk=owner_tenant.pk).aupdate(file_retention_days=None)
    await sync_to_async(file_retention.call_local)()  # the worker's job
    assert await StoredFile.objects.acount() == 0 and stored_paths(files_root) == []


def test_a_fresh_unreferenced_file_is_kept(owner_tenant: Tenant, settings: Any) -> None:
    StoredFile.objects.create(
        tenant=owner_tenant, content_type="text/plain", size=1, sha256="0" * 64, storage_name="x"
    )
    assert files_expire() == 0 and StoredFile.objects.count() == 1
