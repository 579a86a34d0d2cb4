"""The instructions a run adds to its agent's: the shared state (and what people changed in it
during the run), and — for an agent that opted in (``feedback.useInInstructions``) — the thread's
recent rated corrections."""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings

from agui_app.concurrency.db_threads import in_db_thread
from agui_app.runtime.interventions import describe_corrections
from agui_app.runtime.state_sync import intervention_instructions, state_instructions
from agui_app.selectors.feedback import recent_corrections
from capabilities.agent_feedback import uses_feedback_in_instructions
from capabilities.models import Agent

arecent_corrections = in_db_thread(recent_corrections)


async def run_instructions(agent: Agent, thread_pk: uuid.UUID) -> list[Any]:
    """Instruction functions and texts for pydantic-ai's ``instructions=`` of one run."""
    instructions: list[Any] = [state_instructions, intervention_instructions]
    if uses_feedback_in_instructions(agent):  # one read, only for agents that opted in
        corrections = await arecent_corrections(thread_pk, settings.AGUI_FEEDBACK_IN_INSTRUCTIONS)
        if corrections:
            instructions.append(describe_corrections(corrections))
    return instructions
