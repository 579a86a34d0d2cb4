"""Parsing Server-Sent Events bodies in tests."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass
class Frame:
    id: int | None
    data: dict[str, Any]

    @property
    def type(self) -> str:
        return self.data["type"]


def parse_frames(body: bytes | str) -> list[Frame]:
    """Frames of an SSE body (LF framing only: a CR anywhere is a test failure)."""
    text = body.decode() if isinstance(body, bytes) else body
    assert "\r" not in text, "SSE framing must use LF line endings"
    frames: list[Frame] = []
    for block in text.split("\n\n"):
        if not block.strip():
            continue
        frame_id: int | None = None
        data: list[str] = []
        for line in block.split("\n"):
            if line.startswith(":"):
                continue
            if line.startswith("id: "):
                frame_id = int(line[4:])
            elif line.startswith("data: "):
                data.append(line[6:])
        if data:
            frames.append(Frame(frame_id, json.loads("\n".join(data))))
    return frames


def events(body: bytes | str) -> list[dict[str, Any]]:
    return [frame.data for frame in parse_frames(body)]


def types(body: bytes | str) -> list[str]:
    return [frame.type for frame in parse_frames(body)]
