"""Exactly once per tick under real concurrency: four processes, and four threads,
each with its own connection, fire the same 100 ticks of one schedule. Every
tick must produce one job, and one only, whoever wins it."""

from __future__ import annotations

import time
from collections import Counter
from datetime import timedelta

import pytest

from dispatch_jobs import store
from dispatch_jobs.models import Job, Schedule, ScheduleTick
from tests.store import _schedule_procs
from tests.store.concurrency import DEADLINE, run_processes, run_threads
from tests.store.schedule_race import TICKS, fire_loop, ticks_of
from tests.store.support import db_now

pytestmark = pytest.mark.django_db(transaction=True)


def make_schedule() -> Schedule:
    """A one-second schedule whose next fire is an hour ago: 100 ticks all due."""
    row = store.save_schedule(
        Schedule(
            name="race", task="tests.jobs.tasks.add", interval=timedelta(seconds=1), args=[1, 2]
        )
    )
    Schedule.objects.filter(pk=row.pk).update(
        next_fire_at=db_now(-timedelta(hours=1)).replace(microsecond=0)
    )
    row.refresh_from_db()
    return row


def assert_each_tick_fired_once(per_racer: list[list[str]], row: Schedule) -> None:
    counts = Counter(tick for fired in per_racer for tick in fired)
    assert [tick for tick, n in counts.items() if n > 1] == []  # none twice
    assert sorted(counts) == sorted(tick.isoformat() for tick in ticks_of(row))  # none lost
    assert Job.objects.count() == TICKS
    rows = ScheduleTick.objects.all()
    assert rows.count() == TICKS
    jobs = set(Job.objects.values_list("pk", flat=True))
    assert set(rows.values_list("job_id", flat=True)) == jobs


def test_threads_fire_each_tick_exactly_once() -> None:
    row = make_schedule()
    deadline = time.monotonic() + DEADLINE
    moments = ticks_of(row)
    per_racer = run_threads(lambda _: fire_loop(row.pk, moments, deadline))
    assert_each_tick_fired_once(per_racer, row)


def test_processes_fire_each_tick_exactly_once() -> None:
    row = make_schedule()
    per_racer = run_processes(_schedule_procs.fire_ticks, row.pk)
    assert_each_tick_fired_once(per_racer, row)
