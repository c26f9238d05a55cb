"""Maintenance runners in-process: election, reclaim with poison protection,
purge and usage retention, stale worker rows."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.test import override_settings

from dispatch_jobs import store
from dispatch_jobs.models import Job, JobState, Quarantine, Usage, Worker
from dispatch_jobs.worker.config import build_config
from dispatch_jobs.worker.maintenance import LEADERSHIP, Maintenance
from tests.factories import JobFactory, UsageFactory, WorkerFactory, running
from tests.store.support import db_now

pytestmark = pytest.mark.django_db


def maintenance(worker_id: str, **options) -> Maintenance:
    return Maintenance(build_config({"worker_id": worker_id, **options}), threading.Event())


def test_only_the_elected_worker_runs_the_runners():
    expired = JobFactory.create(
        **running("dead", 1, lease_expires_at=db_now(-timedelta(seconds=5)))
    )
    first, second = maintenance("a"), maintenance("b")
    second_ran = []

    def record_run() -> int:
        second_ran.append(1)
        return 0

    second.runners[0].run = record_run
    first.run_once()
    second.run_once()
    assert first.is_leader and not second.is_leader
    assert store.leader_of(LEADERSHIP) == "a"
    assert second_ran == []
    expired.refresh_from_db()
    assert (expired.state, expired.evict_count) == (JobState.PENDING, 1)


def test_reclaim_fails_a_job_evicted_alone_more_than_max_evictions():
    poison = JobFactory.create(
        **running("dead", 3, lease_expires_at=db_now(-timedelta(seconds=5))),
        evict_count=2,
        lone_evictions=2,
        quarantine=Quarantine.ALONE,
    )
    maintenance("a", max_evictions=2).run_once()
    poison.refresh_from_db()
    assert poison.state == JobState.FAILED and poison.evict_count == 3
    assert poison.retry_count == 0 and poison.lone_evictions == 3


@override_settings(
    DISPATCH_JOBS={
        "COMPLETED_RETENTION": timedelta(days=1),
        "USAGE_RETENTION": timedelta(days=1),
        "WORKER_STALE_AFTER": timedelta(minutes=1),
    }
)
def test_purge_usage_retention_and_stale_workers():
    old = db_now(-timedelta(days=2))
    JobFactory.create(state=JobState.COMPLETED, completed_at=old)
    kept = JobFactory.create(state=JobState.COMPLETED, completed_at=db_now())
    UsageFactory.create(recorded_at=old)
    fresh_usage = UsageFactory.create()
    WorkerFactory.create(id="stale", last_seen_at=db_now(-timedelta(minutes=5)))
    WorkerFactory.create(id="alive")
    maintenance("a").run_once()
    assert list(Job.objects.values_list("pk", flat=True)) == [kept.pk]
    assert list(Usage.objects.values_list("pk", flat=True)) == [fresh_usage.pk]
    assert list(Worker.objects.values_list("id", flat=True)) == ["alive"]


@override_settings(DISPATCH_JOBS={"PURGE_ENABLED": False, "COMPLETED_RETENTION": timedelta(1)})
def test_a_disabled_runner_does_not_run():
    JobFactory.create(state=JobState.COMPLETED, completed_at=db_now(-timedelta(days=2)))
    maintenance("a").run_once()
    assert Job.objects.count() == 1


def test_one_failing_runner_stops_none_of_the_others(caplog):
    """A runner that raises (a row no driver reads back, a bug) is logged and tried
    again at its next interval; the runners after it in the tick still run."""
    expired = JobFactory.create(
        **running("dead", 1, lease_expires_at=db_now(-timedelta(seconds=5)))
    )
    runner = maintenance("a")
    ran = []

    def boom() -> int:
        raise ValueError("a value no driver reads back")

    def record() -> int:
        ran.append(1)
        return 0

    runner.runners[0].run, runner.runners[-1].run = boom, record
    runner.run_once()
    assert ran == [1]
    assert "Maintenance reclaim failed; the other runners go on." in caplog.text
    expired.refresh_from_db()
    assert expired.state == JobState.RUNNING  # the failed runner did nothing
