from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(autouse=True)
def files_root(settings: Any, tmp_path: Path) -> Iterator[Path]:
    """Each test stores its files in a directory of its own (local storage)."""
    root = tmp_path / "files"
    settings.STORAGES = {
        **settings.STORAGES,
        "agui_files": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(root)},
        },
    }
    yield root


def stored_paths(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


@pytest.fixture(scope="session")
def s3_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from tests.support.s3 import moto_server

    with moto_server(tmp_path_factory.mktemp("moto")) as endpoint:
        yield endpoint


@pytest.fixture
def s3_bucket(s3_endpoint: Any, settings: Any, files_root: Path) -> str:
    """Files go to a fresh bucket of the local S3 endpoint (django-storages' S3 backend, boto3)."""
    import uuid

    bucket = f"agui-{uuid.uuid4().hex[:12]}"
    s3_endpoint.client().create_bucket(Bucket=bucket)
    settings.STORAGES = {**settings.STORAGES, "agui_files": s3_endpoint.storage_setting(bucket)}
    return bucket
