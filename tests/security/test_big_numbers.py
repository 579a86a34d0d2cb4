"""Numbers a JSON client may send that the database returns differently: PostgreSQL's ``jsonb``
keeps a double like ``1e19`` as an exact numeric, which came back as a Python integer past 64 bits
— every later write, snapshot or run of that thread then failed with a 500 (found by schemathesis).
They are read back as the doubles the client sent, on both databases."""

from __future__ import annotations

import json

import pytest

from agui_app.models import Thread
from agui_app.models.json import StoredJsonDecoder, int_or_float
from tests.support.inputs import run_input, user
from tests.support.runs import run

pytestmark = pytest.mark.django_db(transaction=True)
BIG = [1e19, -1e19, 1.5e300, 18446744073709551615, -9223372036854775808, 12345678901234567890]


def test_integers_past_64_bits_read_back_as_floats_and_the_rest_as_they_were() -> None:
    assert int_or_float("18446744073709551615") == 18446744073709551615  # unsigned 64-bit: kept
    assert int_or_float("-9223372036854775808") == -9223372036854775808
    assert int_or_float("18446744073709551616") == 1.8446744073709552e19
    assert isinstance(int_or_float("1" + "0" * 300), float)
    assert json.loads('{"a": [1, 10000000000000000000000]}', cls=StoredJsonDecoder) == {"a": [1, 1e22]}


async def test_a_state_holding_huge_numbers_can_still_be_patched_snapshotted_and_run(aclient, agent) -> None:
    await run(aclient, "assistant", run_input("big", [user("hi")]))
    put = await aclient.put(
        "/api/v1/threads/big/state", {"state": {"n": BIG}}, content_type="application/json"
    )
    assert put.status_code == 200, put.content
    for patch in ([], [{"op": "add", "path": "/m", "value": 1e19}]):
        response = await aclient.patch(
            "/api/v1/threads/big/state", json.dumps(patch), content_type="application/json-patch+json"
        )
        assert response.status_code == 200, response.content
    state = json.loads((await aclient.get("/api/v1/threads/big/state")).content)["state"]
    assert state == {"n": BIG, "m": 1e19}  # (PostgreSQL may hand 1e19 back as an integer: equal)
    frames = await run(aclient, "assistant", run_input("big", [user("again")]))
    assert frames[-1].type == "RUN_FINISHED"
    snapshot = next(f for f in frames if f.type == "STATE_SNAPSHOT")
    assert snapshot.data["snapshot"] == state
    stored = await Thread.objects.aget(thread_id="big")
    assert stored.state == state
