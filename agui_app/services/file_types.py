"""What a file is, read from its first bytes (never from the name or the client's Content-Type), and
an image's size from its header (``capabilities.media.image_size``). Pure functions."""

from __future__ import annotations

from capabilities.media import image_size

__all__ = ["image_size", "kind_of", "sniff"]

SNIFF_BYTES = 4096  # what the sniffing reads (and what an upload keeps in memory for it)
OCTET_STREAM = "application/octet-stream"

# (offset, magic, content type): the first match wins.
MAGIC: tuple[tuple[int, bytes, str], ...] = (
    (0, b"\x89PNG\r\n\x1a\n", "image/png"),
    (0, b"\xff\xd8\xff", "image/jpeg"),
    (0, b"GIF87a", "image/gif"),
    (0, b"GIF89a", "image/gif"),
    (0, b"%PDF-", "application/pdf"),
    (0, b"ID3", "audio/mpeg"),
    (0, b"OggS", "audio/ogg"),
    (0, b"\x1a\x45\xdf\xa3", "video/webm"),
    (0, b"fLaC", "audio/flac"),
)


def sniff(head: bytes) -> str:
    """The content type of a file that starts with ``head`` (at least the first ``SNIFF_BYTES`` of
    it, or all of a shorter file); ``application/octet-stream`` when nothing matches."""
    for offset, magic, kind in MAGIC:
        if head[offset : offset + len(magic)] == magic:
            return kind
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    if head[:4] == b"RIFF" and head[8:12] == b"WAVE":
        return "audio/wav"
    if head[4:8] == b"ftyp":
        return "audio/mp4" if head[8:11] == b"M4A" else "video/mp4"
    if len(head) >= 2 and head[0] == 0xFF and head[1] & 0xE0 == 0xE0:
        return "audio/mpeg"  # an MPEG audio frame without an ID3 tag
    if looks_like_text(head):
        return "text/plain"
    return OCTET_STREAM


def looks_like_text(head: bytes) -> bool:
    if not head or b"\x00" in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A multi-byte character cut by the end of the sample is still text.
        return exc.start >= len(head) - 3 and exc.reason == "unexpected end of data"
    return True


def kind_of(content_type: str) -> str:
    """The AG-UI input part (``image``, ``audio``, ``video``, ``document``) a content type travels in."""
    major = content_type.split("/", 1)[0]
    return major if major in ("image", "audio", "video") else "document"
