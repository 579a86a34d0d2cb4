"""A batch of events framed for ``application/vnd.ag-ui.event+proto``: each message behind its
length as 4 big-endian bytes, read back by @ag-ui/client 1.0.0's own HTTP stream reader however the
body is cut into chunks; a frame the client would refuse is refused here first."""

from __future__ import annotations

import struct

import orjson
import pytest

from agui_app.events.shape import LoggedEvent, PendingEvent
from agui_app.transports.binary.decoding import DecodeError, decode, decode_stream, unframe
from agui_app.transports.binary.encoding import MAX_FRAME_BYTES, MEDIA_TYPE, FrameTooLarge, encode, frame
from tests.support.agui_events import FULL, MINIMAL
from tests.support.npm_proto import media_type, npm_read_stream

EVENTS = [*FULL.values(), *MINIMAL.values()]


def logged(events: list[dict]) -> list[LoggedEvent]:
    return [
        LoggedEvent(seq=i + 1, run_id="r", type=e["type"], data=orjson.dumps(e).decode())
        for i, e in enumerate(events)
    ]


def test_each_message_follows_its_length_as_four_big_endian_bytes() -> None:
    body = frame(logged(EVENTS[:3]))
    pos, messages = 0, []
    while pos < len(body):
        (n,) = struct.unpack(">I", body[pos : pos + 4])
        messages.append(body[pos + 4 : pos + 4 + n])
        pos += 4 + n
    assert messages == [encode(e) for e in EVENTS[:3]]
    assert unframe(body) == messages


def test_pending_events_frame_like_logged_ones() -> None:
    pending = [PendingEvent(type=e["type"], data=orjson.dumps(e).decode()) for e in EVENTS[:2]]
    assert frame(pending) == frame(logged(EVENTS[:2]))


def test_an_empty_batch_is_an_empty_chunk() -> None:
    assert frame([]) == b""


@pytest.mark.node
def test_the_media_type_is_the_one_the_npm_package_names() -> None:
    assert media_type() == MEDIA_TYPE == "application/vnd.ag-ui.event+proto"


@pytest.mark.node
@pytest.mark.parametrize("chunk", [1, 5, 64 * 1024])
def test_the_client_reads_every_event_of_a_framed_body_whatever_its_chunks(chunk: int) -> None:
    body = frame(logged(EVENTS))
    read = npm_read_stream(body, chunk=chunk)
    assert read.get("error") is None, read
    assert read["events"] == EVENTS
    assert decode_stream(body) == EVENTS


def snapshot_of_size(frame_bytes: int) -> dict:
    """A STATE_SNAPSHOT whose frame (prefix included) is exactly ``frame_bytes`` long."""
    event = {"type": "STATE_SNAPSHOT", "snapshot": ""}
    overhead = len(encode(event)) + 4
    text = "x" * (frame_bytes - overhead)
    while len(encode({**event, "snapshot": text})) + 4 > frame_bytes:  # the length varints grew
        text = text[:-1]
    return {**event, "snapshot": text}


@pytest.mark.node
def test_a_frame_at_the_clients_limit_is_read_and_one_byte_over_is_refused_by_both() -> None:
    at_limit = snapshot_of_size(MAX_FRAME_BYTES)
    assert len(frame(logged([at_limit]))) == MAX_FRAME_BYTES
    read = npm_read_stream(frame(logged([at_limit])))
    assert read.get("error") is None and read["events"] == [at_limit]

    over = {**at_limit, "snapshot": at_limit["snapshot"] + "x"}
    with pytest.raises(FrameTooLarge, match="STATE_SNAPSHOT"):
        frame(logged([over]))
    message = encode(over)  # framed by hand: the client itself refuses it
    read = npm_read_stream(len(message).to_bytes(4, "big") + message)
    assert "exceeded maximum limit" in read["error"]


@pytest.mark.node
def test_a_body_cut_mid_frame_fails_the_client_and_unframe() -> None:
    body = frame(logged(EVENTS[:2]))[:-3]
    assert "ended mid-frame" in npm_read_stream(body)["error"]
    with pytest.raises(DecodeError, match="ends inside"):
        unframe(body)


def test_decode_reads_one_message_of_a_frame() -> None:
    assert decode(unframe(frame(logged(EVENTS[:1])))[0]) == EVENTS[0]
