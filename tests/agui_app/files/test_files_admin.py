"""Django admin for files: a member browses their tenant's files only and deletes them — row and
stored bytes; nobody adds or edits a file there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from agui_app.models import StoredFile, Tenant
from agui_app.services.files import file_store_bytes
from tests.agui_app.files.conftest import stored_paths
from tests.support.files import png

pytestmark = pytest.mark.django_db(transaction=True)
LIST = reverse("admin:agui_app_storedfile_changelist")


def test_a_member_sees_their_tenants_files_and_deletes_one_with_its_bytes(
    client: Client, member: Any, owner_tenant: Tenant, stranger_tenant: Tenant, files_root: Path
) -> None:
    ours = file_store_bytes(data=png(3, 3), tenant=owner_tenant, filename="ours.png")
    theirs = file_store_bytes(data=png(4, 4), tenant=stranger_tenant, filename="theirs.png")
    client.force_login(member)
    listed = client.get(LIST)
    assert listed.status_code == 200
    assert [f.pk for f in listed.context["cl"].result_list] == [ours.pk]
    assert client.get(reverse("admin:agui_app_storedfile_change", args=[theirs.pk])).status_code in (302, 404)
    assert client.get(reverse("admin:agui_app_storedfile_add")).status_code == 403
    response = client.post(LIST, {"action": "delete_selected", "_selected_action": [ours.pk], "post": "yes"})
    assert response.status_code == 302
    assert list(StoredFile.objects.values_list("pk", flat=True)) == [theirs.pk]
    assert len(stored_paths(files_root)) == 1
