"""Schedule ticks: cron in a zone across daylight-saving changes, intervals, and
the boundary checks. Pure computation: no database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from dispatch_jobs.ticks import (
    InvalidSchedule,
    check_cron,
    check_interval,
    check_zone,
    latest_tick,
    next_tick,
)

PARIS = "Europe/Paris"
NEW_YORK = "America/New_York"


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


def ticks(cron: str, zone: str, after: datetime, count: int) -> list[datetime]:
    found = []
    for _ in range(count):
        after = next_tick(cron, None, zone, after)
        found.append(after)
    return found


def test_a_daily_tick_in_the_hour_skipped_by_spring_forward_does_not_fire():
    # 2026-03-29 in Paris: 02:00 CET jumps to 03:00 CEST, so 02:30 does not exist.
    assert ticks("30 2 * * *", PARIS, utc(2026, 3, 27), 3) == [
        utc(2026, 3, 27, 1, 30),  # 02:30 CET
        utc(2026, 3, 28, 1, 30),
        utc(2026, 3, 30, 0, 30),  # 02:30 CEST; the 29th has no 02:30
    ]


def test_a_daily_tick_in_the_hour_repeated_by_fall_back_fires_once():
    # 2026-10-25 in Paris: 03:00 CEST goes back to 02:00 CET; 02:30 happens twice.
    assert ticks("30 2 * * *", PARIS, utc(2026, 10, 24), 3) == [
        utc(2026, 10, 24, 0, 30),  # 02:30 CEST
        utc(2026, 10, 25, 0, 30),  # the first 02:30 only (fold=0)
        utc(2026, 10, 26, 1, 30),  # 02:30 CET
    ]


def test_every_half_hour_through_the_repeated_hour_fires_each_wall_time_once():
    assert ticks("*/30 * * * *", PARIS, utc(2026, 10, 24, 23, 45), 4) == [
        utc(2026, 10, 25, 0, 0),  # 02:00 CEST
        utc(2026, 10, 25, 0, 30),  # 02:30 CEST
        # 02:00 and 02:30 CET (01:00Z, 01:30Z) are the same wall times again: skipped.
        utc(2026, 10, 25, 2, 0),  # 03:00 CET
        utc(2026, 10, 25, 2, 30),
    ]


def test_hourly_ticks_across_spring_forward_stay_an_hour_apart():
    # 01:00 CET, then 02:00 does not exist, then 03:00 CEST: one real hour later.
    assert ticks("0 * * * *", PARIS, utc(2026, 3, 28, 23, 30), 3) == [
        utc(2026, 3, 29, 0, 0),
        utc(2026, 3, 29, 1, 0),
        utc(2026, 3, 29, 2, 0),
    ]


def test_new_york_spring_forward_and_fall_back():
    # 2026-03-08: 02:00 EST -> 03:00 EDT; 2026-11-01: 02:00 EDT -> 01:00 EST.
    assert ticks("15 2 * * *", NEW_YORK, utc(2026, 3, 7), 2) == [
        utc(2026, 3, 7, 7, 15),  # 02:15 EST
        utc(2026, 3, 9, 6, 15),  # 02:15 EDT; the 8th has none
    ]
    assert ticks("30 1 * * *", NEW_YORK, utc(2026, 10, 31, 12), 2) == [
        utc(2026, 11, 1, 5, 30),  # 01:30 EDT, the first of two
        utc(2026, 11, 2, 6, 30),  # 01:30 EST
    ]


def test_a_tick_after_the_second_pass_of_a_repeated_hour_comes_after_it():
    # From inside the second 02:xx (CET), the next tick is 03:00 CET, not back in time.
    assert next_tick("*/10 * * * *", None, PARIS, utc(2026, 10, 25, 1, 25)) == utc(
        2026, 10, 25, 2, 0
    )


def test_interval_ticks_are_multiples_of_the_interval_since_the_epoch():
    every = timedelta(minutes=15)
    assert next_tick("", every, "UTC", utc(2026, 1, 1, 10, 7)) == utc(2026, 1, 1, 10, 15)
    assert next_tick("", every, "UTC", utc(2026, 1, 1, 10, 15)) == utc(2026, 1, 1, 10, 30)
    # Zones do not apply to intervals: the same instants whatever the zone says.
    assert next_tick("", every, PARIS, utc(2026, 10, 25, 0, 59)) == utc(2026, 10, 25, 1, 0)


def test_latest_tick_finds_the_last_tick_in_a_window_or_none():
    at = utc(2026, 5, 1, 12, 7)
    assert latest_tick("*/5 * * * *", None, "UTC", at, utc(2026, 5, 1)) == utc(2026, 5, 1, 12, 5)
    assert latest_tick("0 0 1 1 *", None, "UTC", at, utc(2026, 1, 1)) == utc(2026, 1, 1)
    assert latest_tick("0 0 1 1 *", None, "UTC", at, utc(2026, 1, 2)) is None
    every = timedelta(hours=1)
    assert latest_tick("", every, "UTC", at, utc(2026, 5, 1)) == utc(2026, 5, 1, 12)
    assert latest_tick("", every, "UTC", at, utc(2026, 5, 1, 12, 1)) is None


@pytest.mark.parametrize("expression", ["", "* * *", "61 * * * *", "* * * * * * *", "bogus"])
def test_invalid_cron_expressions_are_refused_naming_the_problem(expression):
    with pytest.raises(InvalidSchedule, match="(?i)cron expression"):
        check_cron(expression)


def test_cron_text_is_normalised():
    assert check_cron("  */5   *  * * *  ") == "*/5 * * * *"


def test_unknown_zones_and_short_intervals_are_refused():
    with pytest.raises(InvalidSchedule, match="Unknown time zone 'Europe/Pari'"):
        check_zone("Europe/Pari")
    with pytest.raises(InvalidSchedule, match="at least 1 second"):
        check_interval(timedelta(milliseconds=10))
    with pytest.raises(InvalidSchedule, match="at least 1 second"):
        check_interval(60)
