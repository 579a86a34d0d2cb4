"""Files for tests: real images made with Pillow, multipart bodies, an upload helper."""

from __future__ import annotations

import io
import uuid
from typing import Any

from tests.support.asgi import AsgiClient, AsgiResponse


def png(width: int = 64, height: int = 48, color: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (width, height), color).save(buffer, format="PNG")
    return buffer.getvalue()


def jpeg(width: int = 40, height: int = 30) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (10, 120, 240)).save(buffer, format="JPEG")
    return buffer.getvalue()


def multipart(
    data: bytes, filename: str = "photo.png", field: str = "file", **extra: str
) -> tuple[bytes, str]:
    """A ``multipart/form-data`` body with one file field (and plain fields ``extra``)."""
    boundary = f"----agui{uuid.uuid4().hex}"
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
        for name, value in extra.items()
    ]
    parts.append(
        f'--{boundary}\r\nContent-Disposition: form-data; name="{field}"; filename="{filename}"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n".encode()
        + data
        + b"\r\n"
    )
    body = b"".join(parts) + f"--{boundary}--\r\n".encode()
    return body, f"multipart/form-data; boundary={boundary}"


async def upload(client: AsgiClient, data: bytes, filename: str = "photo.png", **kwargs: Any) -> AsgiResponse:
    body, content_type = multipart(data, filename)
    return await client.post("/api/v1/files", body, content_type=content_type, **kwargs)


def image_part(file_id: str, mime: str = "image/png") -> dict[str, Any]:
    return {"type": "image", "source": {"type": "url", "value": f"agui-file://{file_id}", "mimeType": mime}}
