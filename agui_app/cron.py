"""Cron expressions of schedules: checked, and their firing times computed, in a time zone.

``croniter`` parses and iterates; this module holds the rules a schedule's cron must follow here:
exactly 5 fields (minute hour day-of-month month day-of-week; a 6th, seconds, only with
``AGUI_SCHEDULE_SECONDS_FIELD``), no ``@`` aliases, no hashed (``H``) or random (``R``) values (a
firing time must not depend on the process), a day that exists (``0 0 30 2 *`` is refused), an IANA
time zone (``zoneinfo``), and a shortest gap between firings of at least the tenant's minimum
interval. Times are computed on the zone's wall clock (croniter with a zone-aware start), so
``0 9 * * *`` in ``Europe/Oslo`` fires at 09:00 Oslo time in winter and in summer; a time the
clocks skip fires at the first time after the jump, a time they repeat fires once.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import pairwise
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterError, croniter
from django.conf import settings

MAX_CRON_CHARS = 120
MAX_ZONE_CHARS = 64
GAPS_CHECKED = 100  # firings looked at for the shortest gap between two of them


class CronInvalid(ValueError):
    """``field``: ``cron`` or ``timezone``; the message says what is wrong."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(message)


def zone(name: str) -> ZoneInfo:
    """The IANA zone ``name``. Raises CronInvalid (field ``timezone``)."""
    if not isinstance(name, str) or not 0 < len(name) <= MAX_ZONE_CHARS or name.startswith(("/", ".")):
        raise CronInvalid("timezone", "must be an IANA time zone name, e.g. UTC or Europe/Oslo")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise CronInvalid(
            "timezone", f"unknown time zone {name!r} (an IANA name, e.g. Europe/Oslo)"
        ) from None


def check_cron(expression: str) -> str:
    """The expression with its fields separated by one space. Raises CronInvalid (field ``cron``)."""
    if not isinstance(expression, str) or len(expression) > MAX_CRON_CHARS:
        raise CronInvalid("cron", f"must be a cron expression of at most {MAX_CRON_CHARS} characters")
    fields = expression.split()
    allowed = (5, 6) if settings.AGUI_SCHEDULE_SECONDS_FIELD else (5,)
    if len(fields) not in allowed:
        raise CronInvalid(
            "cron", "must have 5 fields: minute hour day-of-month month day-of-week (e.g. '0 9 * * mon-fri')"
        )
    for value in fields:
        for part in value.split(","):
            if part[:1].upper() in ("H", "R"):
                raise CronInvalid("cron", f"hashed and random values ({part!r}) are not supported")
    normalized = " ".join(fields)
    if not croniter.is_valid(normalized, strict=True):
        raise CronInvalid(
            "cron", f"{normalized!r} is not a valid cron expression, or names a day that never comes"
        )
    return normalized


def next_times(expression: str, zone_name: str, after: datetime, count: int = 1) -> list[datetime]:
    """The next ``count`` firing times strictly after ``after``, in UTC. Raises CronInvalid."""
    tz = zone(zone_name)
    try:
        iterator = croniter(check_cron(expression), after.astimezone(tz))
        times = [iterator.get_next(datetime) for _ in range(count)]
    except (CroniterError, ValueError) as exc:
        raise CronInvalid("cron", f"no firing time can be computed: {exc}") from exc
    return [moment.astimezone(UTC) for moment in times]


def next_time(expression: str, zone_name: str, after: datetime) -> datetime:
    return next_times(expression, zone_name, after)[0]


def shortest_gap(expression: str, zone_name: str, after: datetime) -> timedelta:
    """The shortest time between two consecutive firings among the next ``GAPS_CHECKED``."""
    times = next_times(expression, zone_name, after, GAPS_CHECKED)
    return min(later - earlier for earlier, later in pairwise(times))


def check_schedule(expression: str, zone_name: str, *, min_interval_seconds: int, now: datetime) -> str:
    """The normalized cron, checked with its zone and the minimum interval. Raises CronInvalid."""
    normalized = check_cron(expression)
    zone(zone_name)
    gap = shortest_gap(normalized, zone_name, now)
    if gap < timedelta(seconds=min_interval_seconds):
        raise CronInvalid(
            "cron",
            f"fires every {gap.total_seconds():g} s at times; the shortest interval allowed is "
            f"{min_interval_seconds} s",
        )
    return normalized
