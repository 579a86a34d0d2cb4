"""Feedback on the agent's answers: a rater's 👍/👎 on one assistant message (or a whole run),
replaceable, logged on the thread as ``CUSTOM agui.feedback`` (docs/concepts/feedback.md).

The rated run's skill versions come from what the run recorded: the ``agui.tool_call_audit`` events of
its tool calls (the capabilities active at each call, with their skill version numbers), plus what the
thread had loaded by the time the run ended (``LoadedCapability``) — so a rating counts against the
skill versions that wrote the answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson
from ag_ui.core import CustomEvent
from django.conf import settings
from django.db import transaction
from django.db.models import Q

from agui_app.access import Principal
from agui_app.errors import NotFound, Unprocessable
from agui_app.events.log import append_events
from agui_app.events.shape import FEEDBACK, TOOL_CALL_AUDIT, encode
from agui_app.models import Event, Feedback, LoadedCapability, Run, Thread
from agui_app.selectors.messages import thread_messages
from capabilities.models import SkillVersion


@dataclass(frozen=True)
class Rated:
    feedback: Feedback
    created: bool  # False: it replaced the rater's earlier rating


def rater_of(principal: Principal) -> str:
    """Who rates: the end user of a user token, else the credential (``key:<prefix>``)."""
    return f"user:{principal.user}" if principal.user else principal.credential


def feedback_submit(
    *,
    principal: Principal,
    thread: Thread,
    message_id: str | None,
    run_id: str | None,
    rating: int,
    comment: str = "",
    tags: list[str] | None = None,
) -> Rated:
    """Record (or replace) the principal's rating of an assistant message or a run of ``thread``
    (already scoped to the principal), and log it as ``CUSTOM agui.feedback``, in one transaction.

    Raises:
        Unprocessable: ``invalid_feedback`` — neither or both of ``message_id``/``run_id``, a rating
            other than 1/-1, a comment or tags past their limits.
        NotFound: ``message_not_found`` (no assistant message of that id on the thread) or the run.
    """
    tags = list(tags or [])
    check_feedback(message_id=message_id, run_id=run_id, rating=rating, comment=comment, tags=tags)
    run = _rated_run(thread, message_id=message_id, run_id=run_id)
    versions = _skill_versions(thread, run)
    rater = rater_of(principal)
    with transaction.atomic():
        # One per (rater, message), or per (rater, run) for a rating of the whole run.
        key: dict[str, Any] = {"thread": thread, "rater": rater, "message_id": message_id or ""}
        if not message_id:
            key["run"] = run
        feedback, created = Feedback.objects.update_or_create(
            **key,
            defaults={
                "tenant_id": thread.tenant_id,
                "agent_id": thread.agent_id,
                "run": run,
                "rating": rating,
                "comment": comment,
                "tags": tags,
            },
        )
        feedback.skill_versions.set(versions)
        value: dict[str, Any] = {
            "messageId": message_id,
            "runId": run.run_id if run is not None else None,
            "rating": rating,
            "by": rater,
            "skills": [{"id": v.skill.skill_id, "version": v.number} for v in versions],
        }
        if comment:
            value["comment"] = comment
        if tags:
            value["tags"] = tags
        append_events(thread.pk, [encode(CustomEvent(name=FEEDBACK, value=value))])
    return Rated(feedback=feedback, created=created)


def check_feedback(
    *, message_id: str | None, run_id: str | None, rating: Any, comment: Any, tags: list[Any]
) -> None:
    problems: list[dict[str, str]] = []
    if bool(message_id) == bool(run_id):
        problems.append({"field": "messageId", "message": "give exactly one of messageId and runId"})
    for name, value in (("messageId", message_id), ("runId", run_id)):
        if value is not None and (not isinstance(value, str) or len(value) > 128):
            problems.append({"field": name, "message": "must be a string of at most 128 characters"})
    if isinstance(rating, bool) or rating not in (1, -1):
        problems.append({"field": "rating", "message": "must be 1 (thumbs up) or -1 (thumbs down)"})
    limit = settings.AGUI_FEEDBACK_COMMENT_MAX_CHARS
    if not isinstance(comment, str) or len(comment) > limit:
        problems.append({"field": "comment", "message": f"must be a string of at most {limit} characters"})
    most, longest = settings.AGUI_FEEDBACK_MAX_TAGS, 64
    if len(tags) > most or not all(isinstance(t, str) and 0 < len(t) <= longest for t in tags):
        problems.append({"field": "tags", "message": f"at most {most} tags, each 1 to {longest} characters"})
    if problems:
        raise Unprocessable(
            problems[0]["message"].capitalize() + ".", code="invalid_feedback", details={"fields": problems}
        )


def _rated_run(thread: Thread, *, message_id: str | None, run_id: str | None) -> Run | None:
    """The run a rated message came from (None: the message is in the history but its events are
    gone, e.g. expired); for ``run_id``, that run of the thread.

    Raises: NotFound (the run, or ``message_not_found``)."""
    if run_id:
        run = Run.objects.filter(thread=thread, run_id=run_id).first()
        if run is None:
            raise NotFound("Run not found.", code="not_found")
        return run
    assert message_id
    needle = '"messageId":' + orjson.dumps(message_id).decode()
    started = (
        Event.objects.filter(thread=thread, type__in=("TEXT_MESSAGE_START", "TEXT_MESSAGE_CHUNK"))
        .filter(data__contains=needle)
        .select_related("run")
        .order_by("seq")
        .first()
    )
    if started is not None and ('"role":"assistant"' in started.data or '"role"' not in started.data):
        return started.run
    if any(m.id == message_id and m.role == "assistant" for m in thread_messages(thread)):
        return None
    raise NotFound(
        f"The thread has no assistant message {message_id!r}.",
        code="message_not_found",
        details={"messageId": message_id},
    )


def _skill_versions(thread: Thread, run: Run | None) -> list[SkillVersion]:
    """The skill versions the run used: active at its tool calls, or loaded by its end."""
    pairs: set[tuple[str, int]] = set()
    if run is not None:
        audits = Event.objects.filter(run=run, type="CUSTOM", data__contains=f'"{TOOL_CALL_AUDIT}"')
        for data in audits.values_list("data", flat=True):
            for capability in (orjson.loads(data).get("value") or {}).get("capabilities") or []:
                if isinstance(capability.get("version"), int):
                    pairs.add((capability["id"], capability["version"]))
    loaded = LoadedCapability.objects.filter(thread=thread, skill_version__isnull=False)
    if run is not None and run.finished_at is not None:
        loaded = loaded.filter(loaded_at__lte=run.finished_at)
    found = list(loaded.select_related("skill_version__skill").order_by("capability_id"))
    by_skill = {
        (item.skill_version.skill.skill_id, item.skill_version.number) for item in found if item.skill_version
    }
    known = {skill for skill, _ in pairs}
    pairs |= {(skill, number) for skill, number in by_skill if skill not in known}
    if not pairs:
        return []
    match = Q()
    for skill_id, number in pairs:
        match |= Q(skill__skill_id=skill_id, number=number)
    return list(
        SkillVersion.objects.filter(match, skill__tenant_id=thread.tenant_id)
        .select_related("skill")
        .order_by("skill__skill_id", "number")
    )
