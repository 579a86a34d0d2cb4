"""Benchmark: what on-demand capabilities save in the model's first request, and what assembly costs.

Run ``python -m bench.catalog [--quick]``; prints a JSON object. One agent offers 50 skills of about
400 words and 2 tools each (100 synthetic registered tools):

- ``first_request_bytes_deferred`` / ``..._always_on``: the bytes of the first model request that the
  capabilities account for (instructions, system-voice parts, and the JSON schemas of the visible
  tools; the user's prompt is left out), captured with a recording ``FunctionModel``, with every skill
  deferred (one catalog line each) vs every skill always on. ``catalog_reduction`` is
  ``1 - deferred / always_on`` (target >= 0.80).
- ``assembly_ms_50_skills``: median time of ``capabilities.assembly.assemble`` on the agent row as a
  run gets it (skills prefetched), target < 20 ms; ``assembly_with_fetch_ms_50_skills`` adds the
  tenant-scoped fetch of that row; ``offer_ms_50_skills`` is assembly's share deciding which skills
  the run gets (``capabilities.availability.offer``).

It sets Django up itself: ``DJANGO_SETTINGS_MODULE=project.settings``, ``DEBUG=1`` unless set, and a
throwaway SQLite database in a temporary directory unless ``DATABASE_URL`` is set (then its data is
removed at the end). Synthetic tools live inside ``registry.override()``.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import json
import os
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

SKILLS = 50
TOOLS_PER_SKILL = 2
WORDS_PER_SKILL = 400
TENANT_SLUG = "bench-catalog"
_VOCABULARY = (
    "order invoice customer account refund shipment address payment card balance ticket status report "
    "check confirm explain summarize compare verify escalate record update review policy limit date "
    "amount currency region warehouse product catalog price discount voucher contract renewal"
).split()


def django_environment() -> str:
    """Set Django up (once per process) and migrate; returns the database vendor.

    Without ``DATABASE_URL`` the database is a throwaway SQLite file in a temporary directory that
    lives until the process exits. A caller that already set Django up (``python -m bench``) keeps
    its database."""
    from django.conf import settings

    if not settings.configured:
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
        os.environ.setdefault("DEBUG", "1")
        if not os.environ.get("DATABASE_URL"):
            directory = tempfile.mkdtemp(prefix="agui-bench-catalog-")
            atexit.register(shutil.rmtree, directory, ignore_errors=True)
            os.environ["DATABASE_URL"] = f"sqlite:///{Path(directory) / 'bench.sqlite3'}"
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0)
    return connection.vendor


def _words(rnd: random.Random, count: int) -> str:
    return " ".join(rnd.choice(_VOCABULARY) for _ in range(count))


def _make_tool(number: int) -> Callable[..., str]:
    def synthetic(query: str, limit: int = 10) -> str:
        return f"{query}: {limit} results"

    synthetic.__name__ = f"bench_tool_{number:03d}"
    synthetic.__doc__ = (
        f"Look up {_VOCABULARY[number % len(_VOCABULARY)]} records for the user (synthetic tool {number}).\n\n"
        "Args:\n"
        "    query: What to look for, in the user's words.\n"
        "    limit: How many records to return at most.\n"
    )
    return synthetic


def _skill_source(number: int, tools: list[str], rnd: random.Random) -> str:
    lines = [_words(rnd, 16) + "." for _ in range(WORDS_PER_SKILL // 16)]
    body = "\n".join(f"- {line.capitalize()}" for line in lines)
    description = f"Use for {_words(rnd, 8)} (area {number})."
    return (
        f"---\nid: skill-{number:02d}\ndescription: {description}\ntools: [{', '.join(tools)}]\n---\n{body}\n"
    )


def _build_agents(tenant: Any) -> tuple[Any, Any]:
    """Two agents offering the same 50 skills: all deferred, and all always on."""
    from capabilities.models import Agent, AgentSkill
    from capabilities.services.skills import skill_import_bundle

    rnd = random.Random(11)
    files = {}
    for number in range(SKILLS):
        tools = [f"bench_tool_{number * TOOLS_PER_SKILL + k:03d}" for k in range(TOOLS_PER_SKILL)]
        files[f"skill-{number:02d}.md"] = _skill_source(number, tools, rnd)
    deferred = Agent.objects.create(tenant=tenant, slug="deferred", name="Deferred", model="demo")
    always_on = Agent.objects.create(tenant=tenant, slug="always-on", name="Always on", model="demo")
    skill_import_bundle(tenant_id=tenant.pk, files=files, agent=deferred)
    skill_import_bundle(tenant_id=tenant.pk, files=files, agent=always_on)
    AgentSkill.objects.filter(agent=always_on).update(always_on=True)
    return deferred, always_on


def _first_request_bytes(agent: Any) -> dict[str, int]:
    """Bytes of the first model request the capabilities account for, seen by a recording model."""
    from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, UserPromptPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from capabilities.assembly import assemble
    from capabilities.runtime import ToolDeps

    seen: dict[str, int] = {}

    def record(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        system_voice = [
            part.content
            for message in messages
            if isinstance(message, ModelRequest)
            for part in message.parts
            if isinstance(part, UserPromptPart) and isinstance(part.content, str)
            if part.content.startswith("<system>")
        ]
        tools = [
            {"name": t.name, "description": t.description, "parameters": t.parameters_json_schema}
            for t in info.function_tools
        ]
        seen["instructions"] = len((info.instructions or "").encode())
        seen["system_parts"] = len("".join(system_voice).encode())
        seen["tool_schemas"] = len(json.dumps(tools, separators=(",", ":")).encode())
        seen["visible_tools"] = len(tools)
        return ModelResponse(parts=[TextPart("ok")])

    with mock.patch("capabilities.assembly.resolve_model", lambda model_id: FunctionModel(record)):
        plan = assemble(agent)
    deps = ToolDeps(
        tenant_slug=TENANT_SLUG, agent_slug=agent.slug, thread_id="t", run_id="r", state_gateway=None
    )  # type: ignore[arg-type]
    asyncio.run(plan.agent.run("Hello", deps=deps))
    seen["total"] = seen["instructions"] + seen["system_parts"] + seen["tool_schemas"]
    return seen


def _median_ms(action: Callable[[], object], repeat: int) -> float:
    action()  # warm-up (imports, schema caches)
    samples = []
    for _ in range(repeat):
        start = time.perf_counter_ns()
        action()
        samples.append(time.perf_counter_ns() - start)
    return round(statistics.median(samples) / 1e6, 3)


def _measure(repeat: int) -> dict[str, Any]:
    from agui_app.models import Tenant
    from agui_app.services.tenancy import tenant_create
    from capabilities.assembly import assemble
    from capabilities.availability import offer
    from capabilities.selectors import agent_for_tenant
    from capabilities.tools.registry import registry

    Tenant.objects.filter(slug=TENANT_SLUG).delete()  # left over by an interrupted run
    with registry.override():
        for number in range(SKILLS * TOOLS_PER_SKILL):
            registry.register(_make_tool(number))
        tenant = tenant_create(slug=TENANT_SLUG, name="Bench")
        try:
            _build_agents(tenant)
            deferred = agent_for_tenant(tenant.pk, "deferred")
            always_on = agent_for_tenant(tenant.pk, "always-on")
            assert deferred is not None and always_on is not None
            sizes_deferred = _first_request_bytes(deferred)
            sizes_always_on = _first_request_bytes(always_on)
            return {
                "first_request_bytes_deferred": sizes_deferred["total"],
                "first_request_bytes_always_on": sizes_always_on["total"],
                "first_request_parts_deferred": sizes_deferred,
                "first_request_parts_always_on": sizes_always_on,
                "catalog_ratio": round(sizes_always_on["total"] / sizes_deferred["total"], 1),
                "catalog_reduction": round(1 - sizes_deferred["total"] / sizes_always_on["total"], 3),
                "catalog_reduction_target": 0.80,
                "assembly_ms_50_skills": _median_ms(lambda: assemble(deferred), repeat),
                # Its share deciding what a run gets (capabilities.availability: stored fields still
                # valid, tools registered, no tool-name clash).
                "offer_ms_50_skills": _median_ms(lambda: offer(deferred), repeat),
                "assembly_ms_50_skills_always_on": _median_ms(lambda: assemble(always_on), repeat),
                "assembly_with_fetch_ms_50_skills": _median_ms(
                    lambda: assemble(agent_for_tenant(tenant.pk, "deferred")), repeat
                ),
                "assembly_target_ms": 20,
            }
        finally:
            tenant.delete()


def run(quick: bool = False) -> dict[str, Any]:
    """Every measurement once, side by side; ``quick`` uses fewer repetitions (< 30 s)."""
    repeat = 15 if quick else 100
    vendor = django_environment()
    return {
        "quick": quick,
        "repeat": repeat,
        "database": vendor,
        "skills": SKILLS,
        "registered_synthetic_tools": SKILLS * TOOLS_PER_SKILL,
        "words_per_skill": WORDS_PER_SKILL,
        **_measure(repeat),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (finishes in < 30 s)")
    print(json.dumps(run(quick=parser.parse_args().quick), indent=2))
