"""Server-only state keys: tools read and write them; no client ever gets or sets them."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from pydantic_ai import RunContext

from agui_app.models import StateRevision, Thread
from capabilities.runtime import ToolDeps
from capabilities.tools.registry import registry, tool
from project.asgi import application
from tests.conftest import make_agent
from tests.support.inputs import run_input, script, user
from tests.support.runs import run, stream
from tests.support.state import client_state

pytestmark = pytest.mark.django_db(transaction=True)
SECRET = "sk-private-7f3a9c"  # must appear in no byte any client receives
SCHEMA = {
    "type": "object",
    "properties": {
        "crmToken": {"type": "string", "x-agui-private": True},
        "profile": {"type": "object"},
    },
}


@pytest.fixture
def private_tools():
    with registry.override():

        @tool(always_on=True)
        def connect_crm(ctx: RunContext[ToolDeps]) -> str:
            """Store the CRM token (server-only) and the profile it fetched (shared)."""
            ctx.deps.state["crmToken"] = SECRET
            ctx.deps.state["profile"] = {"name": "Ann"}
            return "Connected."

        @tool(always_on=True)
        def crm_status(ctx: RunContext[ToolDeps]) -> str:
            """Whether a CRM token is stored (reads the server-only key)."""
            token = ctx.deps.state.get("crmToken")
            return f"token of {len(token)} characters" if token else "no token"

        yield


@pytest.fixture
async def crm_agent(owner_tenant, private_tools):
    return await sync_to_async(make_agent)(owner_tenant, "crm", state_schema=SCHEMA)


async def test_a_private_key_reaches_no_client_but_tools_read_it(aclient, owner_key, crm_agent) -> None:
    steps = ({"call": "connect_crm"}, {"say": "ok"})
    status, frames, raw = await stream(aclient, "/api/v1/agents/crm", run_input("p1", [user(script(*steps))]))
    assert status == 200
    seen = [raw]
    stored = await Thread.objects.aget(thread_id="p1")
    assert stored.private_state == {"crmToken": SECRET}
    assert stored.state == {"profile": {"name": "Ann"}} == client_state(frames)
    # A later run's tool reads it (from the stored private state, in another run).
    frames = await run(aclient, "crm", run_input("p1", [user(script({"call": "crm_status"}, {"say": "ok"}))]))
    assert f"token of {len(SECRET)} characters" in [f.data.get("content") for f in frames]
    for path in ("/state", "", "/events", "/state/history", "/messages"):
        response = await aclient.get(f"/api/v1/threads/p1{path}")
        assert response.status_code == 200, (path, response.content)
        seen.append(response.content)
    _, _, connected = await stream(aclient, "/api/v1/agents/crm/connect", run_input("p1", []))
    seen.append(connected)
    ws = WebsocketCommunicator(
        application, "/ws/v1/threads/p1", headers=[(b"authorization", f"Bearer {owner_key}".encode())]
    )
    assert (await ws.connect())[0]
    await ws.send_json_to({"type": "state.get"})
    await ws.send_json_to({"type": "subscribe", "after": 0})
    finished = 0
    while finished < 2:  # the whole log: both runs
        frame = (await ws.receive_output(timeout=5))["text"]
        seen.append(frame.encode())
        finished += '"type":"RUN_FINISHED"' in frame.replace(" ", "")
    await ws.disconnect()
    assert not [chunk for chunk in seen if SECRET.encode() in chunk]
    assert all(b"crmToken" not in chunk for chunk in seen)
    assert not [
        r async for r in StateRevision.objects.filter(thread=stored) if "crmToken" in json.dumps(r.patch)
    ]


@pytest.mark.parametrize(
    ("method", "body", "content_type"),
    [
        ("patch", [{"op": "add", "path": "/crmToken", "value": "x"}], "application/json-patch+json"),
        ("patch", [{"op": "copy", "from": "/crmToken", "path": "/leak"}], "application/json-patch+json"),
        ("put", {"state": {"crmToken": "x"}}, "application/json"),
    ],
)
async def test_a_client_write_touching_a_private_key_is_422(
    aclient, crm_agent, method, body, content_type
) -> None:
    await run(aclient, "crm", run_input("p2", [user(script({"call": "connect_crm"}, {"say": "ok"}))]))
    before = await Thread.objects.aget(thread_id="p2")
    response = await getattr(aclient, method)(
        "/api/v1/threads/p2/state", json.dumps(body), content_type=content_type
    )
    assert response.status_code == 422, response.content
    assert json.loads(response.content)["error"]["code"] == "private_state_key"
    after = await Thread.objects.aget(thread_id="p2")
    assert (after.state, after.state_version, after.private_state) == (
        before.state,
        before.state_version,
        before.private_state,
    )


async def test_a_run_input_state_naming_a_private_key_is_422(aclient, crm_agent) -> None:
    body = run_input("p3", [user("hi")], state={"crmToken": "forged"})
    status, _, raw = await stream(aclient, "/api/v1/agents/crm", body)
    assert status == 422, raw
    assert not await Thread.objects.filter(thread_id="p3", private_state__has_key="crmToken").aexists()


async def test_a_client_replacing_the_whole_state_keeps_the_private_keys(aclient, crm_agent) -> None:
    await run(aclient, "crm", run_input("p4", [user(script({"call": "connect_crm"}, {"say": "ok"}))]))
    response = await aclient.put(
        "/api/v1/threads/p4/state", {"state": {"profile": {}}}, content_type="application/json"
    )
    assert response.status_code == 200, response.content
    stored = await Thread.objects.aget(thread_id="p4")
    assert stored.state == {"profile": {}} and stored.private_state == {"crmToken": SECRET}
