"""Finding 1 of the hardening issue: a small input never becomes large work.

A JSON Patch is checked op by op *before* each op allocates (``agui_app.state.budget``): the
copy-doubling attack, copy/remove churn, states pushed deeper than orjson encodes, too many ops —
through REST, the WebSocket and the agent's ``update_state`` tool. Each attack is refused with a JSON
error, changes nothing (rows, state bytes), keeps the request's peak memory under ``PEAK_BUDGET`` and
leaves the server answering.
"""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Callable
from typing import Any

import orjson
import pytest
from channels.testing import WebsocketCommunicator
from rest_framework.test import APIClient

from agui_app.models import Thread
from agui_app.services.threads import thread_create
from agui_app.state.budget import PatchBudget, PatchBudgetExceeded, PatchMeter
from agui_app.state.patching import apply_patch_in_place
from capabilities.models import Agent
from project.asgi import application
from tests.support.db import row_counts, thread_fingerprint
from tests.support.inputs import run_input, script, user
from tests.support.runs import run

PEAK_BUDGET = 64 * 1024 * 1024  # bytes a single attacking request may allocate at its peak
SEED = "x" * 60_000


def nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"n": value}
    return value


def doubling(copies: int, seed: Any = SEED) -> list[dict[str, Any]]:
    """The attack of the issue: a ~60 KB seed, then each op copies the whole root into a new member."""
    ops: list[dict[str, Any]] = [{"op": "add", "path": "/seed", "value": seed}]
    ops += [{"op": "copy", "from": "", "path": f"/c{i}"} for i in range(copies)]
    return ops


def churn(rounds: int) -> list[dict[str, Any]]:
    """Copy a large member and remove the copy, again and again: the document never grows."""
    ops: list[dict[str, Any]] = [{"op": "add", "path": "/seed", "value": "y" * 500_000}]
    for _ in range(rounds):
        ops += [{"op": "copy", "from": "/seed", "path": "/tmp"}, {"op": "remove", "path": "/tmp"}]
    return ops


def deep_copy_into_itself() -> list[dict[str, Any]]:
    """Valid ops that nest a 200-level value under its own deepest member: 400 levels, past orjson's 254."""
    deepest = "/a" + "/n" * 199
    return [{"op": "add", "path": "/a", "value": nested(200)}, {"op": "copy", "from": "/a", "path": deepest}]


def deep_move() -> list[dict[str, Any]]:
    return [
        {"op": "add", "path": "/a", "value": nested(150)},
        {"op": "add", "path": "/b", "value": nested(150)},
        {"op": "move", "from": "/b", "path": "/a" + "/n" * 149},
    ]


def deep_add() -> list[dict[str, Any]]:
    return [
        {"op": "add", "path": "/a", "value": nested(200)},
        {"op": "add", "path": "/a" + "/n" * 199, "value": nested(60)},
    ]


ATTACKS: dict[str, tuple[Callable[[], list[dict[str, Any]]], int, str]] = {
    "17 copies of the root": (lambda: doubling(17), 413, "state_too_large"),
    "30 copies of the root": (lambda: doubling(30), 413, "state_too_large"),
    "copies of many small objects": (
        lambda: doubling(20, seed=[{} for _ in range(5_000)]),
        413,
        "state_too_large",
    ),
    "copies of many small members": (
        lambda: doubling(20, seed=[{"k": i, "v": [i]} for i in range(5_000)]),
        413,
        "state_too_large",
    ),
    "copy and remove churn": (lambda: churn(200), 413, "patch_too_large"),
    "copy into its own subtree, deeper than orjson": (deep_copy_into_itself, 422, "state_too_deep"),
    "move deeper than orjson": (deep_move, 422, "state_too_deep"),
    "add deeper than orjson": (deep_add, 422, "state_too_deep"),
    "too many operations": (lambda: [{"op": "test", "path": "", "value": {}}] * 1001, 413, "patch_too_large"),
    "move into its own child": (
        lambda: [{"op": "add", "path": "/a", "value": {}}, {"op": "move", "from": "/a", "path": "/a/b"}],
        422,
        "patch_not_applicable",
    ),
}


@pytest.fixture
def thread(agent: Agent) -> Thread:
    return thread_create(tenant=agent.tenant, agent=agent, thread_id="t1")


def peak_of(call: Callable[[], Any]) -> tuple[Any, int]:
    """(result, peak bytes traced while ``call`` ran)."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before, _ = tracemalloc.get_traced_memory()
        result = call()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, peak - before


@pytest.mark.django_db
@pytest.mark.parametrize("name", list(ATTACKS))
def test_an_amplifying_patch_is_refused_within_the_memory_budget(
    api: APIClient, thread: Thread, name: str
) -> None:
    build, status, code = ATTACKS[name]
    ops = build()
    rows, fingerprint = row_counts(), thread_fingerprint("t1")
    body = orjson.dumps(ops)
    response, peak = peak_of(
        lambda: api.generic(
            "PATCH", "/api/v1/threads/t1/state", body, content_type="application/json-patch+json"
        )
    )
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/json"
    assert response.json()["error"]["code"] == code
    print(f"{name}: peak {peak / 2**20:.1f} MiB")
    assert peak <= PEAK_BUDGET, f"{name}: peak {peak / 2**20:.1f} MiB"
    assert row_counts() == rows
    assert thread_fingerprint("t1") == fingerprint
    assert api.get("/api/v1/threads/t1/state").status_code == 200  # still answering


@pytest.mark.django_db
def test_a_patch_that_grows_the_state_to_just_under_the_limit_is_applied(
    api: APIClient, thread: Thread, settings: Any
) -> None:
    settings.AGUI_STATE_MAX_BYTES = 1_000_000
    ops = doubling(3, seed="z" * 100_000)  # 8 x 100 KB = 800 KB: allowed
    response = api.generic(
        "PATCH", "/api/v1/threads/t1/state", orjson.dumps(ops), content_type="application/json-patch+json"
    )
    assert response.status_code == 200, response.content
    assert 800_000 < len(orjson.dumps(Thread.objects.get(pk=thread.pk).state)) <= 1_000_000


@pytest.mark.django_db
def test_a_second_patch_cannot_push_a_stored_deep_state_past_the_depth_limit(
    api: APIClient, thread: Thread
) -> None:
    first = [{"op": "add", "path": "/a", "value": nested(240)}]
    ok = api.generic(
        "PATCH", "/api/v1/threads/t1/state", orjson.dumps(first), content_type="application/json-patch+json"
    )
    assert ok.status_code == 200, ok.content
    fingerprint = thread_fingerprint("t1")
    second = [{"op": "add", "path": "/a" + "/n" * 239 + "/x", "value": nested(20)}]
    refused = api.generic(
        "PATCH", "/api/v1/threads/t1/state", orjson.dumps(second), content_type="application/json-patch+json"
    )
    assert refused.status_code == 422 and refused.json()["error"]["code"] == "state_too_deep"
    assert thread_fingerprint("t1") == fingerprint


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "name", ["17 copies of the root", "copy into its own subtree, deeper than orjson", "too many operations"]
)
async def test_the_websocket_refuses_the_same_patches(owner_key: str, agent: Agent, name: str) -> None:
    from asgiref.sync import sync_to_async

    await sync_to_async(thread_create)(tenant=agent.tenant, agent=agent, thread_id="t1")
    fingerprint = await sync_to_async(thread_fingerprint)("t1")
    ws = WebsocketCommunicator(
        application, "/ws/v1/threads/t1", headers=[(b"authorization", f"Bearer {owner_key}".encode())]
    )
    connected, _ = await ws.connect()
    assert connected
    await ws.send_json_to({"type": "state.patch", "patch": ATTACKS[name][0]()})
    error = await ws.receive_json_from(timeout=10)
    assert (error["type"], error["code"], error["ref"]) == ("error", ATTACKS[name][2], "state.patch")
    await ws.send_json_to({"type": "ping"})
    assert await ws.receive_json_from(timeout=5) == {"type": "pong"}
    await ws.disconnect()
    assert await sync_to_async(thread_fingerprint)("t1") == fingerprint


@pytest.mark.django_db(transaction=True)
async def test_the_update_state_tool_gets_the_refusal_and_the_run_goes_on(aclient: Any, agent: Agent) -> None:
    patch = doubling(17, seed="x" * 20_000)
    steps = script({"call": "update_state", "args": {"patch": patch}}, {"say": "still here"})
    frames = await run(aclient, "assistant", run_input("t2", [user(steps)]))
    results = [f.data["content"] for f in frames if f.type == "TOOL_CALL_RESULT"]
    assert results and "bytes" in results[0]
    assert frames[-1].type == "RUN_FINISHED"
    assert (await Thread.objects.aget(thread_id="t2")).state == {}


# --- the meter alone ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "ops, limit",
    [
        (doubling(17), "size"),
        (churn(100), "work"),
        (deep_copy_into_itself(), "depth"),
        (deep_move(), "depth"),
    ],
)
def test_the_meter_stops_the_op_before_it_runs_and_the_document_is_rolled_back(
    ops: list[Any], limit: str
) -> None:
    doc: dict[str, Any] = {"keep": [1, 2, 3]}
    budget = PatchBudget(max_bytes=4 * 2**20, max_work_bytes=16 * 2**20, max_containers=200_000)
    with pytest.raises(PatchBudgetExceeded) as refused:
        apply_patch_in_place(doc, ops, before=PatchMeter(budget, doc))
    assert refused.value.limit == limit
    assert doc == {"keep": [1, 2, 3]}


def test_the_meter_tracks_removals_so_a_shrinking_patch_may_grow_again() -> None:
    doc: dict[str, Any] = {"big": "b" * 900}
    ops = [{"op": "remove", "path": "/big"}, {"op": "add", "path": "/other", "value": "o" * 900}]
    budget = PatchBudget(max_bytes=1000, max_work_bytes=10_000, max_containers=10)
    assert apply_patch_in_place(doc, ops, before=PatchMeter(budget, doc)) == {"other": "o" * 900}
    assert json.dumps(doc)


# --- other small inputs that used to become large work -----------------------------------------

LAUGHS = "\n".join(
    [
        "---",
        "id: laughs",
        "description: lol",
        "model_settings:",
        "  extra_body:",
        '    a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
    ]
    + [f"    {chr(98 + i)}: &{chr(98 + i)} [{','.join(['*' + chr(97 + i)] * 9)}]" for i in range(8)]
    + ["---", "body"]
)  # valid frontmatter that expands to 9**9 strings wherever it is turned into JSON
SKILLS = {
    "billion laughs (aliases of aliases)": LAUGHS,
    "one anchor and alias": "---\nid: x\ndescription: &d hello\nnote: *d\n---\nbody",
    "frontmatter nested 10,000 deep": "---\nid: x\ndescription: d\ndeep: "
    + "[" * 10_000
    + "]" * 10_000
    + "\n---\nbody",
}


@pytest.mark.django_db
@pytest.mark.parametrize("name", list(SKILLS))
def test_yaml_that_expands_or_nests_is_refused_cheaply(api: APIClient, agent: Agent, name: str) -> None:
    rows = row_counts()
    for path in ("/api/v1/skills/validate", "/api/v1/skills"):
        response, peak = peak_of(lambda path=path: api.post(path, {"source": SKILLS[name]}, format="json"))
        assert response.status_code == 422, response.content
        assert response.json()["error"]["code"] == "invalid_skill"
        assert peak <= PEAK_BUDGET
    assert row_counts() == rows


def zip_of(members: dict[str, bytes]) -> bytes:
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


BOMBS = {
    "one member inflating 1000:1": lambda: zip_of({"bomb.md": b"0" * (8 * 2**20)}),
    "members summing past 10 MiB": lambda: zip_of({f"s{i}.md": bytes(range(256)) * 8000 for i in range(6)}),
    "1,001 entries": lambda: zip_of({f"e{i}.md": b"x" for i in range(1001)}),
}


@pytest.mark.django_db
@pytest.mark.parametrize("name", list(BOMBS))
def test_a_zip_bomb_is_refused_from_its_directory(api: APIClient, agent: Agent, name: str) -> None:
    from capabilities.models import Skill

    body = BOMBS[name]()
    assert len(body) < 10 * 2**20
    skills = list(Skill.objects.values_list("skill_id", "source"))
    response, peak = peak_of(
        lambda: api.generic("POST", "/api/v1/skills/import", body, content_type="application/zip")
    )
    assert response.status_code == 422, response.content
    assert response.json()["error"]["code"] == "invalid_bundle"
    assert peak <= PEAK_BUDGET + 2 * len(body), f"{peak / 2**20:.1f} MiB"
    assert list(Skill.objects.values_list("skill_id", "source")) == skills


RUN_INPUTS = {
    "1,001 messages": lambda: {"messages": [user("hi", f"m{i}") for i in range(1001)]},
    "129 tools": lambda: {
        "tools": [{"name": f"t{i}", "description": "d", "parameters": {"type": "object"}} for i in range(129)]
    },
    "tool-call arguments of 70 KB": lambda: {
        "messages": [
            user("hi"),
            {
                "id": "a1",
                "role": "assistant",
                "toolCalls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "x", "arguments": "[" + "1," * 35_000 + "1]"},
                    }
                ],
            },
        ]
    },
}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("name", list(RUN_INPUTS))
async def test_a_run_input_over_a_count_or_size_limit_is_refused(
    aclient: Any, agent: Agent, name: str
) -> None:
    from asgiref.sync import sync_to_async

    rows = await sync_to_async(row_counts)()
    body = run_input("t9", [user("hi")])
    body.update(RUN_INPUTS[name]())
    response = await aclient.post(
        "/api/v1/agents/assistant",
        body,
        content_type="application/json",
        headers={"Accept": "text/event-stream"},
    )
    assert response.status_code == 422, response.content
    assert response.json()["error"]["code"] == "invalid_run_input"
    assert await sync_to_async(row_counts)() == rows


@pytest.mark.django_db
@pytest.mark.parametrize("limit", ["100000", "9" * 18])
def test_limit_parameters_are_clamped(api: APIClient, agent: Agent, limit: str) -> None:
    for number in range(3):
        thread_create(tenant=agent.tenant, agent=agent, thread_id=f"p{number}")
    page = api.get(f"/api/v1/threads?limit={limit}")
    assert page.status_code == 200 and len(page.json()["results"]) == 3


EVIL_SCHEMAS = {
    "pattern": ({"properties": {"s": {"type": "string", "pattern": "^(a|aa)+$"}}}, {"s": "a" * 60 + "!"}),
    "nested quantifier": ({"properties": {"s": {"pattern": "^(a|a?)+$"}}}, {"s": "a" * 60 + "!"}),
    "patternProperties": ({"patternProperties": {"^(a|aa)+$": {"type": "number"}}}, {"a" * 60 + "!": "x"}),
    "additionalProperties": (
        {"patternProperties": {"^(a|aa)+$": {}}, "additionalProperties": False},
        {"a" * 60 + "!": 1},
    ),
}


@pytest.mark.django_db
@pytest.mark.parametrize("name", list(EVIL_SCHEMAS))
def test_a_backtracking_schema_pattern_cannot_hold_the_process(
    api: APIClient, agent: Agent, name: str
) -> None:
    import time

    schema, state = EVIL_SCHEMAS[name]
    Agent.objects.filter(pk=agent.pk).update(state_schema=schema)
    thread_create(tenant=agent.tenant, agent=agent, thread_id="t3")
    fingerprint = thread_fingerprint("t3")
    started = time.monotonic()
    response = api.put("/api/v1/threads/t3/state", {"state": state}, format="json")
    assert time.monotonic() - started < 3
    assert response.status_code == 422, response.content
    assert response.json()["error"]["code"] == "state_schema_violation"
    assert thread_fingerprint("t3") == fingerprint


@pytest.mark.django_db
def test_a_schema_whose_patterns_would_escape_the_time_limit_is_not_stored(
    api: APIClient, agent: Agent
) -> None:
    schema = {"type": "object", "patternProperties": {"^(a|aa)+$": {}}, "unevaluatedProperties": False}
    response = api.patch("/api/v1/agents/assistant", {"stateSchema": schema}, format="json")
    assert response.status_code == 422, response.content
    assert "unevaluatedProperties" in response.content.decode()
    assert Agent.objects.get(pk=agent.pk).state_schema is None
