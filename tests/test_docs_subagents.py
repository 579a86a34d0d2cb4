"""docs/concepts/subagents.md: its two-agent example runs as written (the demo model), and it names
every setting and error code the feature adds."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.support.asgi import AsgiClient
from tests.support.runs import run

pytestmark = pytest.mark.django_db(transaction=True)
PAGE = Path(__file__).resolve().parents[1] / "docs" / "concepts" / "subagents.md"
BLOCK = re.compile(r'```json title="POST (\S+)"\n(.*?)```', re.DOTALL)


async def test_the_pages_two_agent_example_runs_as_written(aclient: AsgiClient, owner_tenant) -> None:
    from asgiref.sync import sync_to_async

    from capabilities.models import Skill
    from capabilities.services.skills import skill_import_bundle
    from tests.conftest import ROOT

    await sync_to_async(skill_import_bundle)(
        tenant_id=owner_tenant.pk, files={"todos.md": (ROOT / "skills" / "todos.md").read_text()}
    )
    assert await Skill.objects.filter(skill_id="todos").aexists()
    blocks = BLOCK.findall(PAGE.read_text())
    assert [path for path, _ in blocks] == ["/api/v1/agents", "/api/v1/agents", "/api/v1/agents/lead"]
    for path, body in blocks[:2]:
        response = await aclient.post(path, json.loads(body), content_type="application/json")
        assert response.status_code == 201, response.content
    frames = await run(aclient, "lead", json.loads(blocks[2][1]))
    finished = next(f.data for f in frames if f.type == "SUBAGENT_FINISHED")
    assert finished["result"] == "Added buy milk."
    assert frames[-1].data["outcome"] == {"type": "success"}


def test_the_page_names_every_setting_and_error_code() -> None:
    text = PAGE.read_text()
    for name in (
        "AGUI_SUBAGENT_MAX_DEPTH",
        "AGUI_SUBAGENT_MAX_PER_RUN",
        "AGUI_SUBAGENT_MAX_TASK_CHARS",
        "cancelled",
        "run_interrupted",
        "subagent_needs_client",
        "subagent_failed",
        "thread_agent_mismatch",
        "invalid_agent",
        "agui.handoff",
    ):
        assert f"`{name}`" in text, name
