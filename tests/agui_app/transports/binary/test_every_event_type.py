"""Every AG-UI event type, with every field the protocol gives it and with only the required ones,
round-trips between our encoder/decoder and npm's ``@ag-ui/proto`` 1.0.0: our bytes are the npm
encoder's bytes, the npm decoder reads them back as the JSON we started from, and our decoder reads
the npm encoder's bytes back as that JSON too."""

from __future__ import annotations

from typing import Any

import pytest

from agui_app.transports.binary.decoding import decode
from agui_app.transports.binary.encoding import encode
from tests.support.agui_events import FULL, MINIMAL
from tests.support.npm_proto import npm_decode, npm_encode

pytestmark = pytest.mark.node

# As the server logs them: a timestamp, no rawEvent or metadata (the per-token fast path).
AS_LOGGED = {
    kind: {k: v for k, v in event.items() if k not in ("rawEvent", "metadata")}
    for kind, event in FULL.items()
}
CASES = {
    **{f"{kind}-full": e for kind, e in FULL.items()},
    **{f"{kind}-minimal": e for kind, e in MINIMAL.items()},
    **{f"{kind}-as-logged": e for kind, e in AS_LOGGED.items()},
}


@pytest.fixture(scope="module")
def npm() -> dict[str, Any]:
    """Both directions through the npm package, in one Node process each."""
    names = list(CASES)
    ours = [encode(CASES[n]) for n in names]
    encoded = npm_encode([CASES[n] for n in names])
    decoded = npm_decode(ours)
    return {
        n: {"ours": o, "encoded": e, "decoded": d}
        for n, o, e, d in zip(names, ours, encoded, decoded, strict=True)
    }


def test_the_cases_cover_all_31_event_types() -> None:
    assert len(FULL) == len(MINIMAL) == 31


@pytest.mark.parametrize("name", CASES)
def test_our_bytes_are_the_npm_encoders_bytes(npm: dict[str, Any], name: str) -> None:
    theirs = npm[name]["encoded"]
    assert theirs["warnings"] == []  # the npm encoder found the event valid
    assert npm[name]["ours"] == theirs["bytes"]


@pytest.mark.parametrize("name", CASES)
def test_the_npm_decoder_reads_our_bytes_back_as_the_json(npm: dict[str, Any], name: str) -> None:
    answer = npm[name]["decoded"]
    assert "error" not in answer, answer
    assert answer["event"] == CASES[name]


@pytest.mark.parametrize("name", CASES)
def test_our_decoder_reads_the_npm_encoders_bytes_back_as_the_json(npm: dict[str, Any], name: str) -> None:
    assert decode(npm[name]["encoded"]["bytes"]) == CASES[name]
