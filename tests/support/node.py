"""Running the real-client Node scripts of ``tests/node`` (``@ag-ui/client`` 1.0.0) against a server."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

NODE_DIR = Path(__file__).resolve().parents[1] / "node"


def run_node(script: str, *args: str, key: str, timeout: float = 60) -> dict[str, Any]:
    """Run ``node tests/node/<script>.mjs args…`` with ``AGUI_KEY=key``; return its JSON document.

    Fails the test, showing stdout and stderr, on a non-zero exit, a timeout or output that is not
    one JSON document. The client's warnings stay on (``SUPPRESS_TRANSFORMATION_WARNINGS`` unset).
    """
    env = {k: v for k, v in os.environ.items() if k not in {"SUPPRESS_TRANSFORMATION_WARNINGS", "NODE_ENV"}}
    env["AGUI_KEY"] = key
    command = ["node", str(NODE_DIR / f"{script}.mjs"), *args]
    try:
        done = subprocess.run(command, cwd=NODE_DIR, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{script}.mjs timed out after {timeout} s\nstdout: {exc.stdout}\nstderr: {exc.stderr}")
    if done.returncode != 0:
        pytest.fail(f"{script}.mjs exited {done.returncode}\nstdout: {done.stdout}\nstderr: {done.stderr}")
    try:
        return json.loads(done.stdout)
    except json.JSONDecodeError:
        pytest.fail(
            f"{script}.mjs did not print one JSON document\nstdout: {done.stdout}\nstderr: {done.stderr}"
        )
