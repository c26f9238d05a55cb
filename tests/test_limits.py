"""One function per rule (dispatch_jobs/limits.py): durations and queue names are
judged the same wherever they come from."""

from __future__ import annotations

import math
from datetime import timedelta

import pytest

from dispatch_jobs import limits
from dispatch_jobs.exceptions import DispatchJobsError, InvalidDuration


def test_queue_names():
    assert limits.is_queue_name("q")
    assert limits.is_queue_name("q" * limits.QUEUE_MAX)
    for bad in ("", "q" * (limits.QUEUE_MAX + 1), None, 5, ["q"]):
        assert not limits.is_queue_name(bad)


@pytest.mark.parametrize(
    ("value", "options", "expected"),
    [
        (timedelta(seconds=2), {}, timedelta(seconds=2)),
        (2, {"numbers": True}, timedelta(seconds=2)),
        ("500ms", {"text": True}, timedelta(milliseconds=500)),
        ("1m", {"text": True}, timedelta(minutes=1)),
        ("0", {"text": True, "zero": True}, timedelta(0)),
    ],
)
def test_durations_read(value, options, expected):
    assert limits.to_duration(value, "x", **options) == expected


@pytest.mark.parametrize(
    ("value", "options", "fragment"),
    [
        (2, {}, "x: cannot read 2 as a duration (a datetime.timedelta)"),
        ("2s", {"numbers": True}, "cannot read '2s' as a duration"),
        (True, {"numbers": True}, "cannot read True"),
        ("-1", {"text": True}, "x: cannot read '-1'"),
        (timedelta(0), {}, "x must be positive, got"),
        (-1, {"numbers": True, "zero": True}, "x must not be negative, got -1"),
        (math.nan, {"numbers": True}, "x must be positive, got nan"),
        (timedelta(days=8), {"high": limits.LEASE_TTL_MAX}, "x must be at most 7 days"),
        (
            math.inf,
            {"numbers": True, "low": limits.LEASE_TTL_MIN, "high": limits.LEASE_TTL_MAX},
            "x must be between 1s and 7 days, got inf",
        ),
        (math.inf, {"numbers": True}, "x must be finite"),
        (timedelta(microseconds=1), {"low": limits.TIMEOUT_MIN}, "x must be at least 1ms"),
    ],
)
def test_durations_refused(value, options, fragment):
    with pytest.raises(InvalidDuration) as caught:
        limits.to_duration(value, "x", **options)
    assert fragment in str(caught.value)
    assert isinstance(caught.value, DispatchJobsError | ValueError)


def test_a_number_too_large_for_a_timedelta_is_refused_not_an_overflow():
    with pytest.raises(InvalidDuration, match="x is too long"):
        limits.to_duration(1e300, "x", numbers=True)


def test_storable_times():
    from datetime import UTC, datetime

    assert limits.is_storable_time(datetime(2026, 1, 1, tzinfo=UTC))
    assert limits.is_storable_time(datetime(2026, 1, 1))  # naive: a wall-clock time
    assert not limits.is_storable_time(datetime(9999, 12, 31, tzinfo=UTC))
    assert not limits.is_storable_time(datetime(1000, 1, 1))
