"""A schedule's cron: 5 fields in an IANA zone, firing on the zone's wall clock, with the rules that
keep a firing time predictable (no aliases, no hashed or random values, a day that exists) and the
tenant's shortest interval."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agui_app.cron import CronInvalid, check_cron, check_schedule, next_time, next_times, shortest_gap

NOW = datetime(2026, 3, 27, 12, 0, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    "expression",
    ["0 9 * * mon-fri", "*/15 * * * *", "0 0 L * *", "30 8 1,15 jan,jul *", "0 12 * * 5#3"],
)
def test_it_accepts_five_field_crons(expression: str) -> None:
    assert check_cron(f"  {expression}  ") == expression


@pytest.mark.parametrize(
    ("expression", "why"),
    [
        ("* * * *", "5 fields"),
        ("0 9 * * * *", "5 fields"),  # a 6th field (seconds) only with AGUI_SCHEDULE_SECONDS_FIELD
        ("@daily", "5 fields"),
        ("H * * * *", "hashed and random"),
        ("R 9 * * *", "hashed and random"),
        ("61 * * * *", "not a valid cron"),
        ("0 0 30 2 *", "never comes"),
        ("x" * 121, "at most 120"),
    ],
)
def test_it_refuses_what_would_not_fire_predictably(expression: str, why: str) -> None:
    with pytest.raises(CronInvalid, match=why) as caught:
        check_cron(expression)
    assert caught.value.field == "cron"


def test_a_sixth_field_is_seconds_only_when_the_setting_allows_it(settings) -> None:
    settings.AGUI_SCHEDULE_SECONDS_FIELD = True
    assert next_times("* * * * * */20", "UTC", NOW, 2) == [
        NOW.replace(second=40),
        NOW + timedelta(seconds=30),
    ]


@pytest.mark.parametrize("zone", ["Mars/Olympus", "", "../etc/passwd", "/etc/localtime", "x" * 65])
def test_an_unknown_time_zone_is_refused(zone: str) -> None:
    with pytest.raises(CronInvalid) as caught:
        next_time("0 9 * * *", zone, NOW)
    assert caught.value.field == "timezone"


def test_times_follow_the_zones_wall_clock_across_daylight_saving() -> None:
    # Oslo moves from UTC+1 to UTC+2 on 2026-03-29: 09:00 local is 08:00 UTC before, 07:00 UTC after.
    times = next_times("0 9 * * *", "Europe/Oslo", NOW, 3)
    assert times == [
        datetime(2026, 3, 28, 8, 0, tzinfo=UTC),
        datetime(2026, 3, 29, 7, 0, tzinfo=UTC),
        datetime(2026, 3, 30, 7, 0, tzinfo=UTC),
    ]


def test_a_time_the_clocks_skip_fires_once_right_after_the_jump() -> None:
    times = next_times("30 2 * * *", "Europe/Oslo", NOW, 3)  # 02:30 does not exist on 2026-03-29
    assert times[1] == datetime(2026, 3, 29, 1, 0, tzinfo=UTC)  # 03:00 local, the first time after
    assert len(set(times)) == 3


def test_the_shortest_gap_is_the_tenants_minimum_interval_at_least() -> None:
    assert shortest_gap("0,1 9 * * *", "UTC", NOW) == timedelta(minutes=1)
    assert check_schedule("*/5 * * * *", "UTC", min_interval_seconds=300, now=NOW) == "*/5 * * * *"
    with pytest.raises(CronInvalid, match="shortest interval allowed is 600 s"):
        check_schedule("*/5 * * * *", "UTC", min_interval_seconds=600, now=NOW)
    with pytest.raises(CronInvalid, match="shortest interval"):
        check_schedule("0,1 9 * * *", "UTC", min_interval_seconds=120, now=NOW)
