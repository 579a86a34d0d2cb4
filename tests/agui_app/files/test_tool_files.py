"""A tool that returns a file (pydantic-ai ``BinaryContent``): the file is stored as the thread's, the
history and the client see a reference, and the model gets the bytes (DESIGN §21)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from pydantic_ai.messages import BinaryContent, ImageUrl, ModelRequest, ToolReturnPart, UserPromptPart

from agui_app.models import StoredFile, Tenant
from agui_app.models.files import FileReference
from agui_app.runtime.file_parts import FileParts
from capabilities.services.skills import skill_import_bundle
from tests.conftest import make_agent
from tests.support.asgi import AsgiClient
from tests.support.files import png
from tests.support.http import text_of
from tests.support.inputs import run_input, script, user
from tests.support.runs import run

pytestmark = pytest.mark.django_db(transaction=True)

CHARTS = """---
id: charts
description: Use to draw images and charts.
tools: [render_image]
---
Call `render_image` to draw.
"""


async def test_a_tool_returning_a_file_stores_it_and_the_history_names_it(
    aclient: AsgiClient, owner_tenant: Tenant
) -> None:
    from asgiref.sync import sync_to_async

    agent = await sync_to_async(make_agent)(owner_tenant, skills=())
    await sync_to_async(skill_import_bundle)(
        tenant_id=owner_tenant.pk, files={"charts.md": CHARTS}, agent=agent
    )
    steps = script(
        {"call": "load_capability", "args": {"id": "charts"}},
        {"call": "render_image", "args": {"width": 50, "height": 20}},
        {"say": "Drawn."},
    )
    frames = await run(aclient, "assistant", run_input("t-draw", [user(steps)]))
    assert text_of(frames) == "Drawn."
    stored = await StoredFile.objects.aget()
    assert (stored.content_type, stored.width, stored.height) == ("image/png", 50, 20)
    assert await FileReference.objects.filter(file=stored, thread__thread_id="t-draw").aexists()
    results = [f.data for f in frames if f.type == "TOOL_CALL_RESULT"]
    assert f"agui-file://{stored.pk}" in results[-1]["content"]
    messages = (await aclient.get("/api/v1/threads/t-draw/messages")).json()["messages"]
    assert any(f"agui-file://{stored.pk}" in str(m.get("content")) for m in messages if m["role"] == "tool")
    content = await aclient.get(f"/api/v1/files/{stored.pk}/content")
    assert content.status_code == 200 and content.content.startswith(b"\x89PNG")


async def test_the_model_gets_the_bytes_of_a_referenced_tool_result_and_user_part(
    owner_tenant: Tenant,
) -> None:
    from asgiref.sync import sync_to_async

    from agui_app.services.files import file_store_bytes

    data = png(12, 34)
    file = await sync_to_async(file_store_bytes)(data=data, tenant=owner_tenant)
    other = await sync_to_async(file_store_bytes)(data=png(5, 5, (1, 2, 3)), tenant=owner_tenant)
    reference = ImageUrl(url=file.url, media_type="image/png")
    request = ModelRequest(
        parts=[
            UserPromptPart(content=["look", ImageUrl(url=other.url, media_type="image/png")]),
            ToolReturnPart(tool_name="render_image", content=reference, tool_call_id="c1"),
        ]
    )

    from dataclasses import dataclass

    @dataclass
    class RequestContext:
        messages: list[Any]

    capability = FileParts(owner_tenant.pk)
    prepared = await capability.prepare_model_request(None, RequestContext(messages=[request]))  # type: ignore[arg-type]
    [sent] = prepared.messages
    user_part, tool_part = sent.parts
    assert isinstance(user_part.content[1], BinaryContent) and user_part.content[1].data == png(
        5, 5, (1, 2, 3)
    )
    assert isinstance(tool_part.content, BinaryContent) and tool_part.content.data == data
    assert request.parts[1].content is reference  # the history keeps the reference
    stranger = await Tenant.objects.acreate(slug=f"s-{uuid.uuid4().hex[:6]}")
    foreign = await FileParts(stranger.pk).prepare_model_request(None, RequestContext(messages=[request]))  # type: ignore[arg-type]
    assert (
        foreign.messages[0].parts[1].content == f"[file {file.pk} was deleted]"
    )  # another tenant's: never read
