"""The published binary codec (npm's ``@ag-ui/proto`` 1.0.0 and ``@ag-ui/client`` 1.0.0's stream
reader), run by ``tests/node/proto_codec.mjs`` in one Node process per call."""

from __future__ import annotations

import base64
import json
import os
import subprocess
from typing import Any

import pytest

from tests.support.node import NODE_DIR

Obj = dict[str, Any]


def _run(request: Obj, timeout: float = 60) -> Obj:
    env = {k: v for k, v in os.environ.items() if k not in {"SUPPRESS_TRANSFORMATION_WARNINGS", "NODE_ENV"}}
    done = subprocess.run(
        ["node", str(NODE_DIR / "proto_codec.mjs")],
        cwd=NODE_DIR,
        env=env,
        input=json.dumps(request),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if done.returncode != 0:
        pytest.fail(f"proto_codec.mjs exited {done.returncode}\nstdout: {done.stdout}\nstderr: {done.stderr}")
    return json.loads(done.stdout)


def npm_encode(events: list[Obj]) -> list[Obj]:
    """``@ag-ui/proto``'s ``encode`` of each event: ``{"bytes": b"…"}`` or ``{"error": "…"}``, with
    the library's ``warnings``."""
    answers = _run({"encode": events})["encoded"]
    for answer in answers:
        if "bytes" in answer:
            answer["bytes"] = base64.b64decode(answer["bytes"])
    return answers


def npm_decode(messages: list[bytes]) -> list[Obj]:
    """``@ag-ui/proto``'s ``decode`` of each message, as JSON: ``{"event": …}`` or ``{"error": …,
    "unknown": <an AGUIUnknownEventTypeError>}``, with the library's ``warnings``."""
    return _run({"decode": [base64.b64encode(m).decode() for m in messages]})["decoded"]


def npm_read_stream(body: bytes, chunk: int = 65536) -> Obj:
    """``body`` read as @ag-ui/client reads a binary response arriving in ``chunk``-byte pieces:
    ``{"events": […]}`` or ``{"error": "…"}``."""
    return _run({"stream": base64.b64encode(body).decode(), "chunk": chunk})["stream"]


def media_type() -> str:
    return _run({})["mediaType"]
