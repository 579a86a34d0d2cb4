"""Talking to a real server process over HTTP (httpx)."""

from __future__ import annotations

from typing import Any

import httpx

from tests.support.sse import Frame, parse_frames


def stream_run(base_url: str, key: str, agent: str, body: dict[str, Any], timeout: float = 60) -> list[Frame]:
    response = httpx.post(
        f"{base_url}/api/v1/agents/{agent}",
        json=body,
        headers={"Authorization": f"Bearer {key}", "Accept": "text/event-stream"},
        timeout=timeout,
    )
    assert response.status_code == 200, response.text
    return parse_frames(response.content)


def get_json(base_url: str, key: str, path: str) -> Any:
    response = httpx.get(f"{base_url}{path}", headers={"Authorization": f"Bearer {key}"}, timeout=30)
    assert response.status_code == 200, response.text
    return response.json()


def text_of(frames: list[Frame]) -> str:
    return "".join(f.data["delta"] for f in frames if f.type == "TEXT_MESSAGE_CONTENT")


class SseReader:
    """Reads an SSE response frame by frame (for tests that stop reading mid-stream)."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self.lines = response.iter_lines()

    def next_frame(self) -> Frame | None:
        data: list[str] = []
        frame_id: int | None = None
        for line in self.lines:
            if line == "":
                if data:
                    import json

                    return Frame(frame_id, json.loads("\n".join(data)))
                continue
            if line.startswith("id: "):
                frame_id = int(line[4:])
            elif line.startswith("data: "):
                data.append(line[6:])
        return None
