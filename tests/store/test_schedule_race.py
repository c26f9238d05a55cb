"""Exactly once per tick under real concurrency: four processes, and four threads,
each with its own connection, fire the same 100 ticks of one schedule. Every
tick must produce one job, and one only, whoever wins it."""

from __future__ import annotations

import multiprocessing
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection

from dispatch_jobs import store
from dispatch_jobs.models import Job, Schedule, ScheduleTick
from dispatch_jobs.ticks import next_tick
from tests.store import _schedule_procs
from tests.store.schedule_race import fire_loop
from tests.store.support import db_now

pytestmark = pytest.mark.django_db(transaction=True)

RACERS = 4
TICKS = 100
DEADLINE = 120.0


def make_schedule() -> tuple[Schedule, list[str]]:
    row = store.save_schedule(
        Schedule(
            name="race", task="tests.jobs.tasks.add", interval=timedelta(seconds=1), args=[1, 2]
        )
    )
    tick = next_tick("", row.interval, "UTC", db_now(-timedelta(hours=1)))
    ticks = []
    for _ in range(TICKS):
        ticks.append(tick.isoformat())
        tick = next_tick("", row.interval, "UTC", tick)
    return row, ticks


def assert_each_tick_fired_once(per_racer: list[list[str]], ticks: list[str]) -> None:
    counts = Counter(tick for fired in per_racer for tick in fired)
    assert [tick for tick, n in counts.items() if n > 1] == []  # none twice
    assert sorted(counts) == sorted(ticks)  # none lost
    assert Job.objects.count() == TICKS
    rows = ScheduleTick.objects.all()
    assert rows.count() == TICKS
    assert set(rows.values_list("job_id", flat=True)) == set(
        Job.objects.values_list("pk", flat=True)
    )


def test_threads_fire_each_tick_exactly_once() -> None:
    row, ticks = make_schedule()
    barrier = threading.Barrier(RACERS)

    def race(_: int) -> list[str]:
        barrier.wait(DEADLINE)
        import time

        return fire_loop(row.pk, ticks, time.monotonic() + DEADLINE)

    with ThreadPoolExecutor(RACERS) as pool:
        per_racer = list(pool.map(race, range(RACERS)))
    assert_each_tick_fired_once(per_racer, ticks)


def test_processes_fire_each_tick_exactly_once() -> None:
    row, ticks = make_schedule()
    ctx = multiprocessing.get_context("spawn")
    ready, results, go = ctx.Queue(), ctx.Queue(), ctx.Event()
    db_name = connection.settings_dict["NAME"]
    procs = [
        ctx.Process(
            target=_schedule_procs.fire_ticks,
            args=(db_name, f"proc-{i}", row.pk, ticks, ready, go, results),
        )
        for i in range(RACERS)
    ]
    for proc in procs:
        proc.start()
    outcomes: list[Any] = []
    try:
        for _ in procs:
            ready.get(timeout=DEADLINE)
        go.set()
        outcomes = [results.get(timeout=DEADLINE) for _ in procs]
    finally:
        for proc in procs:
            proc.join(timeout=DEADLINE)
            if proc.is_alive():
                proc.kill()
    errors = [error for _, _, errs in outcomes for error in errs]
    assert errors == [], "\n".join(errors)
    per_racer = [found for _, found, _ in outcomes]
    assert_each_tick_fired_once(per_racer, ticks)
