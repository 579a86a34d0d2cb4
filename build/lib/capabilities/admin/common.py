"""What the skill and agent admins share."""

from __future__ import annotations

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
