"""docs/concepts/files.md names every file setting and every error code the files code raises."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PAGE = (ROOT / "docs" / "concepts" / "files.md").read_text()
SOURCES = [
    "agui_app/services/files.py",
    "agui_app/services/input_files.py",
    "agui_app/transports/sse/uploads.py",
]


def test_every_file_setting_is_named() -> None:
    settings = set(
        re.findall(r"\b(AGUI_FILES?_[A-Z0-9_]*[A-Z0-9])\b", (ROOT / "project" / "settings.py").read_text())
    )
    assert settings, "no file settings found"
    assert sorted(s for s in settings if f"`{s}`" not in PAGE) == []


def test_every_error_code_is_named() -> None:
    codes = {
        code for source in SOURCES for code in re.findall(r'code = "([a-z_]+)"', (ROOT / source).read_text())
    }
    codes |= {
        code for source in SOURCES for code in re.findall(r'code="([a-z_]+)"', (ROOT / source).read_text())
    }
    assert codes >= {"file_too_large", "file_quota_exceeded", "invalid_input_part"}
    assert sorted(c for c in codes if f"`{c}`" not in PAGE) == []
