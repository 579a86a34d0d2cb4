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
