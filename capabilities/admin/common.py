"""What the skill and agent admins share."""

from __future__ import annotations

import difflib
import json
from typing import Any

from django.db.models import Prefetch, QuerySet
from django.http import HttpRequest
from django.utils.html import format_html
from django.utils.safestring import SafeString

from capabilities.admin_scoping import member_tenant_ids
from capabilities.models import Agent, AgentSkill


def pretty_json(value: Any) -> SafeString:
    return format_html('<pre class="agui-json">{}</pre>', json.dumps(value, indent=2, ensure_ascii=False))


def shows_several_tenants(request: HttpRequest) -> bool:
    ids = member_tenant_ids(request)
    return ids is None or len(ids) > 1


def agents_with_skills(agents: QuerySet[Agent]) -> QuerySet[Agent]:
    return agents.prefetch_related(
        Prefetch("agent_skills", queryset=AgentSkill.objects.select_related("skill").defer("skill__source"))
    )


def diff_lines(before: list[str], after: list[str], *, fromfile: str, tofile: str) -> list[tuple[str, str]]:
    """(css class, line) pairs of the unified diff from ``before`` to ``after`` (the versions pages)."""
    lines = difflib.unified_diff(before, after, fromfile=fromfile, tofile=tofile, lineterm="")
    classes = {"+": "added", "-": "removed", "@": "hunk"}
    return [
        ("file" if line.startswith(("+++", "---")) else classes.get(line[:1], "context"), line)
        for line in lines
    ]


def admin_changed_by(request: HttpRequest) -> str:
    """Who made a change in admin, as agent versions record it: ``admin:<username>``."""
    return f"admin:{request.user.get_username()}"
