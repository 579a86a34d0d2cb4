"""``pip install .`` works: the wheel holds the service's three packages (with the playground's
static files and the migrations) and the pinned runtime requirements, nothing else of the checkout."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_the_wheel_names_its_packages_and_the_pinned_requirements(tmp_path: Path) -> None:
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    [wheel] = tmp_path.glob("agui_hub-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.split("/")[0] for n in names} == {
        "agui_app",
        "capabilities",
        "project",
        f"{wheel.name.split('-py3')[0]}.dist-info",
    }
    assert "agui_app/migrations/0001_initial.py" in names
    assert "agui_app/static/playground/main.js" in names
    metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("METADATA"))).decode()
    pinned = [
        line
        for line in (ROOT / "requirements.txt").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    required = [
        line.removeprefix("Requires-Dist: ")
        for line in metadata.splitlines()
        if line.startswith("Requires-Dist:")
    ]
    assert len(required) == len(pinned) and "Django==5.2.19" in required
