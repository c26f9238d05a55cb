"""Queue limits as values: the QUEUE_LIMITS setting and its check (E035)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import override_settings

from dispatch_jobs.checks import check_worker_settings
from dispatch_jobs.exceptions import DispatchJobsError, InvalidQueueLimits
from dispatch_jobs.queue_limits import (
    QueueLimits,
    parse_queue_limits,
    period_text,
    to_period,
    to_rate,
)


def test_a_full_entry_reads_as_limits():
    parsed = parse_queue_limits(
        {"emails": {"max_running": 5, "max_running_per_org": 2, "rate": "100/m"}, "plain": {}}
    )
    assert parsed == {
        "emails": QueueLimits(
            max_running=5,
            max_running_per_org=2,
            rate_limit=100,
            rate_period=timedelta(minutes=1),
        ),
        "plain": QueueLimits(),
    }
    assert parsed["emails"].describe() == "5 running, 2 per org, 100 per 1m"
    assert not parsed["plain"].limited


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("100/m", (100, timedelta(minutes=1))),
        ("5/s", (5, timedelta(seconds=1))),
        ("3 / 10s", (3, timedelta(seconds=10))),
        ("1000/h", (1000, timedelta(hours=1))),
        ("7/1.5m", (7, timedelta(seconds=90))),
    ],
)
def test_rates(text, expected):
    assert to_rate(text, "rate") == expected


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"max_running": 0}, "from 1 to 1,000,000 (to stop a queue, pause it), got 0"),
        ({"max_running": -1}, "max_running must be from 1"),
        ({"max_running": "5"}, "max_running must be a whole number or None"),
        ({"max_running": True}, "max_running must be a whole number or None"),
        ({"max_running_per_org": 2.5}, "max_running_per_org must be a whole number"),
        ({"rate": "100"}, 'a rate is "N/period"'),
        ({"rate": "x/m"}, 'a rate is "N/period"'),
        ({"rate": 100}, 'a rate is "N/period"'),
        ({"rate": "0/m"}, "rate's count must be from 1"),
        ({"rate": "5/0.5s"}, "rate's period must be between 1s and 1 day"),
        ({"rate": "5/2 days"}, "cannot read '2 days' as a duration"),
        ({"concurrency": 3}, "unknown key(s) concurrency"),
    ],
)
def test_bad_entries_say_what_is_wrong(entry, message):
    with pytest.raises(InvalidQueueLimits) as caught:
        parse_queue_limits({"emails": entry})
    assert message in str(caught.value)
    assert "'emails'" in str(caught.value)
    assert isinstance(caught.value, DispatchJobsError)


def test_the_table_and_its_keys_are_checked():
    with pytest.raises(InvalidQueueLimits, match="must be a dict of queue name"):
        parse_queue_limits(["emails"])
    with pytest.raises(InvalidQueueLimits, match="is not a queue name"):
        parse_queue_limits({"": {"max_running": 1}})
    with pytest.raises(InvalidQueueLimits, match="an entry is a dict"):
        parse_queue_limits({"emails": 5})


def test_a_rate_needs_both_halves():
    with pytest.raises(InvalidQueueLimits, match="both a count and a period"):
        QueueLimits(rate_limit=5)


def test_periods_read_and_print_alike():
    for text in ("1m", "10s", "2h", "1.5s", "90m"):
        assert to_period(period_text(to_period(text, "p")), "p") == to_period(text, "p")
    assert period_text(timedelta(minutes=90)) == "90m"


def test_e035_queue_limits_must_parse():
    def messages(value: Any) -> list[Any]:
        with override_settings(DISPATCH_JOBS={"QUEUE_LIMITS": value}):
            return [m for m in check_worker_settings() if m.id == "dispatch_jobs.E035"]

    assert messages({"emails": {"max_running": 5, "rate": "100/m"}}) == []
    [error] = messages({"emails": {"rate": "100 per minute"}})
    assert error.msg.startswith("DISPATCH_JOBS['QUEUE_LIMITS']: Queue 'emails': rate:")
    assert "docs/how-to/limits.md" in error.hint
    assert len(messages("emails=5")) == 1
