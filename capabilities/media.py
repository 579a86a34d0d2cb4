"""Media a model receives: what an image is, read from its header with Pillow (no pixel data
decoded), and how ``demo`` describes the files of a message."""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import IO, Any

from pydantic_ai.messages import BinaryContent, FileUrl


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


def prompt_text(content: Any) -> str:
    """A user prompt's text: the string, or the text items of a multimodal prompt joined."""
    if isinstance(content, str):
        return content
    return "\n".join(item for item in content if isinstance(item, str))


def is_media(item: Any) -> bool:
    return isinstance(item, BinaryContent | FileUrl)


def describe_media(media: Sequence[Any]) -> str:
    """What ``demo`` answers to a message with files: each one's content type, size and, for an
    image, its width x height (read with Pillow from the bytes it received)."""
    lines = []
    for item in media:
        if isinstance(item, BinaryContent):
            line = f"{item.media_type}, {len(item.data)} bytes"
            if item.is_image and (size := image_size(item.data)) is not None:
                line += f", {size[0]}x{size[1]} pixels"
        else:
            line = f"{item.media_type} at a URL I was not given the bytes of"
        lines.append(line)
    count = f"{len(lines)} file" + ("s" if len(lines) != 1 else "")
    return f"I received {count}: " + "; ".join(lines) + "."
