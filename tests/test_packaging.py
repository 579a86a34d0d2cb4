"""``pip install`` of the wheel serves: the wheel holds the service's three packages (with the playground's
static files, the migrations, and the checkout's templates/, skills/ and built docs site/ under
``project/bundled/``) and the pinned runtime requirements; installed into a fresh venv, its ``agui-hub serve``
migrates, seeds and answers the README's curl."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import urllib.request
import zipfile
from pathlib import Path

import pytest

from tests.support.servers import free_port

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    [found] = out.glob("agui_hub-*.whl")
    return found


@pytest.mark.slow
def test_the_wheel_names_its_packages_and_the_pinned_requirements(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.split("/")[0] for n in names} == {
        "agui_app",
        "capabilities",
        "project",
        f"{wheel.name.split('-py3')[0]}.dist-info",
    }
    assert "agui_app/migrations/0001_initial.py" in names
    assert "agui_app/static/playground/main.js" in names
    for folder in ("templates", "skills"):  # every file of the checkout's folder, bundled
        for path in (ROOT / folder).rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts:
                assert f"project/bundled/{path.relative_to(ROOT)}" in names, path
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
    entry_points = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("entry_points.txt")))
    assert b"agui-hub = project.cli:main" in entry_points


def readme_curl() -> str:
    readme = (ROOT / "README.md").read_text()
    found = re.search(r"<!-- --8<-- \[start:readme-curl\] -->\n```bash\n(.*?)```", readme, re.DOTALL)
    assert found is not None, "README has no readme-curl block"
    return found.group(1)


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_the_installed_wheel_serves_and_answers_the_readmes_curl(wheel: Path, tmp_path: Path) -> None:
    """A fresh venv, ``pip install`` of the wheel (its pinned requirements from the index), then
    ``agui-hub serve`` from an empty directory; the README's curl, run by curl, streams a whole run."""
    if shutil.which("curl") is None:
        pytest.skip("needs curl")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    installed = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert installed.returncode == 0, installed.stderr[-3000:]
    # Nothing of the checkout or of the test run's settings: an empty directory and a clean environment.
    env = {name: os.environ[name] for name in ("PATH", "HOME", "LANG", "TMPDIR") if name in os.environ}
    port = free_port()
    workdir = tmp_path / "elsewhere"
    workdir.mkdir()
    server = subprocess.Popen(
        [str(venv / "bin" / "agui-hub"), "serve", "--port", str(port)],
        cwd=workdir,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        key, seen = None, []
        assert server.stdout is not None
        for line in server.stdout:
            seen.append(line)
            if line.strip().startswith("agui_"):
                key = line.strip()
            if "Uvicorn running" in line or len(seen) > 200:
                break
        assert key, "".join(seen)
        assert (workdir / ".agui-hub" / "db.sqlite3").is_file()  # the data directory, not site-packages

        script = readme_curl().replace("127.0.0.1:8000", f"127.0.0.1:{port}")
        streamed = subprocess.run(
            ["bash", "-c", script], env={**env, "KEY": key}, capture_output=True, text=True, timeout=60
        )
        assert streamed.returncode == 0, streamed.stderr
        assert '"type":"RUN_STARTED"' in streamed.stdout and '"type":"RUN_FINISHED"' in streamed.stdout
        assert "get_forecast" in streamed.stdout  # the demo skills were seeded from the bundled skills/

        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as page:
            assert page.status == 200 and b"/docs/" in page.read()  # the bundled templates/
        if (ROOT / "site" / "index.html").is_file():  # built by `mkdocs build` (CI does, before the tests)
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/docs/guides/browser/", timeout=10) as docs:
                assert docs.status == 200 and b"user token" in docs.read()
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    assert server.returncode == 0  # a SIGTERM stops it cleanly
    leftovers = [
        proc
        for proc in Path("/proc").iterdir()
        if proc.name.isdigit() and str(venv) in _cmdline(proc)  # the worker (run_huey) stopped with it
    ]
    assert not leftovers


def _cmdline(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""
