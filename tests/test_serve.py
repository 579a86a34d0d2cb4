"""``scripts/serve.sh`` says each step as it starts — installing (pip's own output, not ``--quiet``),
migrating, seeding — then the URL and the demo key; a second start skips pip and makes no new key.

Run for real on a copy of this checkout (its tracked files), with no variable of the test run
exported. Its ``.venv`` is a view of the tests' own environment (the same interpreter and
site-packages), so nothing is downloaded: the copy's ``requirements.txt`` holds one pin that
environment already satisfies, which pip reports as satisfied and leaves as it is. The script runs
until it prints the URL and the server answers, then it is stopped.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import httpx
import pytest

from tests.support.servers import free_port

ROOT = Path(__file__).resolve().parents[1]
STEPS = [
    "==> Installing the requirements into .venv",
    "==> Migrating the database",
    "==> Seeding the demo tenant",
    "AG-UI Hub is starting on http://127.0.0.1:",
]


def make_checkout(target: Path) -> Path:
    """A copy of the checkout's tracked files at ``target``, with a ``.venv`` that is a view of ours."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=False)
    if listed.returncode != 0:
        pytest.skip("not a git checkout: cannot tell which files a checkout has")
    for name in filter(None, listed.stdout.decode().split("\0")):
        if (ROOT / name).is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, target / name)
    django_pin = next(
        line for line in (ROOT / "requirements.txt").read_text().splitlines() if line.startswith("Django==")
    )
    (target / "requirements.txt").write_text(django_pin + "\n")  # installed already: pip changes nothing
    venv = target / ".venv"
    (venv / "bin").mkdir(parents=True)
    shutil.copy(Path(sys.prefix) / "pyvenv.cfg", venv / "pyvenv.cfg")
    (venv / "bin" / "python").symlink_to(Path(sys.executable).resolve())
    site = venv / Path(sysconfig.get_paths()["purelib"]).relative_to(sys.prefix)
    site.parent.mkdir(parents=True)
    site.symlink_to(sysconfig.get_paths()["purelib"], target_is_directory=True)
    return target


def serve(checkout: Path, port: int, within: float = 120) -> str:
    """Run ``scripts/serve.sh`` until it printed the URL and the server answers; its output so far."""
    env = {
        "PATH": os.environ["PATH"],
        "HOME": os.environ.get("HOME", "/tmp"),
        "PORT": str(port),
        "LANG": "C.UTF-8",
    }
    log = checkout / f"serve-{port}.out"
    with log.open("wb") as out:
        process = subprocess.Popen(
            ["bash", "scripts/serve.sh"],
            cwd=checkout,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            assert process.poll() is None, log.read_text(errors="replace")
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    return log.read_text(errors="replace")
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise AssertionError(f"not serving in {within} s:\n{log.read_text(errors='replace')}")
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(20)


def positions(output: str, steps: list[str]) -> list[int]:
    return [output.find(step) for step in steps]


@pytest.mark.slow
def test_serve_announces_each_step_in_order_and_a_second_start_skips_pip(tmp_path: Path) -> None:
    checkout = make_checkout(tmp_path / "checkout")

    first = serve(checkout, free_port())

    found = positions(first, STEPS)
    assert -1 not in found and found == sorted(found), first
    assert "Creating the virtual environment" not in first  # .venv was there already
    assert "Requirement already satisfied: Django" in first  # pip's own output, shown
    key = re.search(r"Demo API key \(shown once; stored hashed\):\s+(\S+)", first)
    assert key is not None, first

    second = serve(checkout, free_port())

    assert "==> Requirements already installed" in second
    assert "Installing the requirements" not in second and "Requirement already satisfied" not in second
    found = positions(second, STEPS[1:])
    assert -1 not in found and found == sorted(found), second
    assert key.group(1) not in second and "The demo API key was shown when it was made" in second
