"""Model usage: what a run spent, the tenant's monthly counters, and the quotas held against them.

A run's usage (model requests, input and output tokens, as pydantic-ai reports them) is written on
the ``Run`` and added to the tenant's ``UsageMonth`` in the transaction that ends the run. A run of a
tenant with a monthly run quota is counted when it is admitted, under its quota: a run that would start
past the tenant's monthly runs or tokens is refused (429 ``quota_exceeded``) before anything is written.
Without a run quota the run is counted with its end, in the same statement as its tokens
(``Run.usage_counted`` says which), so ``quotas.used.runs`` counts finished runs then.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, date, datetime

from django.db.models import F
from django.utils import timezone

from agui_app.errors import TooManyRequests
from agui_app.models import Run, Tenant, UsageMonth


@dataclass(frozen=True)
class Usage:
    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.requests + other.requests,
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
        )


class QuotaExceeded(TooManyRequests):
    code = "quota_exceeded"


def month_of(moment: datetime) -> date:
    return moment.astimezone(UTC).date().replace(day=1)


def next_month(month: date) -> datetime:
    year, number = (month.year + 1, 1) if month.month == 12 else (month.year, month.month + 1)
    return datetime(year, number, 1, tzinfo=UTC)


def usage_this_month(tenant: Tenant) -> UsageMonth:
    """The tenant's counters of the current month (an unsaved empty row when it has none yet)."""
    month = month_of(timezone.now())
    return UsageMonth.objects.filter(tenant=tenant, month=month).first() or UsageMonth(
        tenant=tenant, month=month
    )


def _refuse(tenant: Tenant, what: str, used: int, quota: int, month: date) -> QuotaExceeded:
    resets = next_month(month)
    error = QuotaExceeded(
        f"The tenant's monthly quota of {quota} {what} is used up ({used}); it resets on {resets:%Y-%m-%d}.",
        details={
            "quota": what,
            "limit": quota,
            "used": used,
            "resetsAt": resets.isoformat().replace("+00:00", "Z"),
        },
    )
    error.retry_after = max(1, math.ceil((resets - timezone.now()).total_seconds()))
    return error


def quota_check(tenant: Tenant) -> None:
    """Raises ``QuotaExceeded`` when the tenant's monthly runs or tokens are used up. Reads only."""
    if tenant.monthly_run_quota is None and tenant.monthly_token_quota is None:
        return
    used = usage_this_month(tenant)
    if tenant.monthly_run_quota is not None and used.runs >= tenant.monthly_run_quota:
        raise _refuse(tenant, "runs", used.runs, tenant.monthly_run_quota, used.month)
    if tenant.monthly_token_quota is not None and used.tokens >= tenant.monthly_token_quota:
        raise _refuse(tenant, "tokens", used.tokens, tenant.monthly_token_quota, used.month)


def usage_count_run(tenant: Tenant) -> None:
    """Count one admitted run in this month's counters (inside the admission's transaction).

    Raises:
        QuotaExceeded: a concurrent admission took the last run of the quota; the caller's
            transaction rolls back, so nothing of the refused run stays.
    """
    month = month_of(timezone.now())
    counted = UsageMonth.objects.filter(tenant=tenant, month=month)
    if tenant.monthly_run_quota is not None:
        counted = counted.filter(runs__lt=tenant.monthly_run_quota)
    if counted.update(runs=F("runs") + 1):  # one statement when the month's row exists
        return
    row, created = UsageMonth.objects.get_or_create(tenant=tenant, month=month)
    if not (created and counted.update(runs=F("runs") + 1)):
        raise _refuse(tenant, "runs", row.runs, tenant.monthly_run_quota or 0, month)


def usage_fields(usage: Usage) -> dict[str, int]:
    """The run's own usage columns (for a caller that updates the run's row itself)."""
    return {
        "requests": usage.requests,
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
    }


def usage_add_to_month(*, run: Run, tenant_id: int, usage: Usage, count_run: bool = False) -> None:
    """Add what a run spent to its month's counters, and the run itself when ``count_run`` (it was
    not counted at its admission). One statement when the month's row exists."""
    if usage == Usage() and not count_run:
        return
    month = month_of(run.started_at or timezone.now())
    month_row = UsageMonth.objects.filter(tenant_id=tenant_id, month=month)
    added = {
        "requests": F("requests") + usage.requests,
        "input_tokens": F("input_tokens") + usage.input_tokens,
        "output_tokens": F("output_tokens") + usage.output_tokens,
        **({"runs": F("runs") + 1} if count_run else {}),
    }
    if not month_row.update(**added):
        UsageMonth.objects.get_or_create(tenant_id=tenant_id, month=month)
        month_row.update(**added)
