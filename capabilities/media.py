"""What an image is, read from its header with Pillow (no pixel data decoded)."""

from __future__ import annotations

import io
from typing import IO


def image_size(data: bytes | IO[bytes]) -> tuple[int, int] | None:
    """``(width, height)`` of the image in ``data`` (bytes or a readable binary file); ``None`` when
    Pillow cannot read it."""
    from PIL import Image, UnidentifiedImageError

    source = io.BytesIO(data) if isinstance(data, bytes | bytearray) else data
    try:
        with Image.open(source) as image:
            return int(image.width), int(image.height)
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError):
        return None
