"""The producer alone: pydantic-ai's ``AGUIAdapter`` streaming the demo model's scripted words,
with our event encoding, in this process: no HTTP, no database writes, no hub, no SSE.

This is the ceiling of the pipeline's events/s for one run on one core: if the full pipeline is
close to it, the time goes to the producer (the agent framework), not to persistence or fan-out.
The agent is the seeded demo agent as ``capabilities.assembly.assemble`` builds it for a run
(its skills' capabilities included) when Django is set up on the bench database, else a bare
pydantic-ai ``Agent`` on the same ``FunctionModel``.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from typing import Any

from bench.client import words


@dataclass
class Producer:
    agent: Any
    kind: str

    def describe(self) -> str:
        return f"{self.kind} + AGUIAdapter.run_stream + encode, in the bench process (no DB/HTTP)"


def build_producer() -> Producer:
    """Call from sync code (the assembly reads the database)."""
    try:
        from capabilities.assembly import assemble
        from capabilities.models import Agent as AgentRow

        row = AgentRow.objects.select_related("tenant").get(tenant__slug="demo", slug="assistant")
        return Producer(assemble(row).agent, "assembled demo agent")
    except Exception as exc:  # Django not set up, or the models changed: the bare agent still tells
        from pydantic_ai import Agent
        from pydantic_ai.models.function import FunctionModel

        from capabilities.demo_model import demo_stream

        return Producer(
            Agent(FunctionModel(stream_function=demo_stream)), f"bare pydantic-ai Agent ({exc!r})"
        )


def _run_input(text: str) -> Any:
    from ag_ui.core import RunAgentInput, UserMessage

    return RunAgentInput(
        thread_id=f"bench-producer-{uuid.uuid4().hex[:8]}",
        run_id=f"r-{uuid.uuid4().hex[:12]}",
        state={},
        messages=[UserMessage(id="u-1", role="user", content=json.dumps({"agui_script": [{"say": text}]}))],
        tools=[],
        context=[],
        forwarded_props={},
    )


async def produce(producer: Producer, events: int) -> dict[str, Any]:
    """One run of ``events`` words; events/s from the first event to the last (like the client)."""
    from pydantic_ai.ui import SSE_CONTENT_TYPE
    from pydantic_ai.ui.ag_ui import AGUIAdapter

    from agui_app.events.shape import encode

    adapter = AGUIAdapter(agent=producer.agent, run_input=_run_input(words(events)), accept=SSE_CONTENT_TYPE)
    count = 0
    started = time.perf_counter()
    first = last = started
    async for event in adapter.run_stream():
        encode(event)
        last = time.perf_counter()
        if not count:
            first = last
        count += 1
    return {
        "events": count,
        "events_per_s": round(count / (last - started), 1) if last > started else None,
        "events_per_s_from_first_event": round((count - 1) / (last - first), 1) if last > first else None,
        "ttfe_ms": round((first - started) * 1000, 2),
    }
