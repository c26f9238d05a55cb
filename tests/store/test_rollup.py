"""The rollup of finished jobs into per-minute buckets: counts, run times,
incremental runs from the watermark, ties on the finish time, two leaders
racing, and retention of old buckets."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connections
from django.db.models import Sum

from dispatch_jobs import store
from dispatch_jobs.models import Job, JobState, TaskMinute
from dispatch_jobs.store import db
from tests.admin import builders

NOW = timedelta(0)  # no lag: these tests finish jobs and roll them up at once


def _totals(**filters) -> dict[str, int]:
    sums = TaskMinute.objects.filter(**filters).aggregate(
        completed=Sum("completed"),
        failed=Sum("failed"),
        cancelled=Sum("cancelled"),
        retried=Sum("retried"),
    )
    return {key: value or 0 for key, value in sums.items()}


@pytest.mark.django_db
def test_finished_jobs_are_counted_per_task_queue_and_minute():
    builders.completed(3, name="shop.send", queue="mail")
    builders.failed(2, name="shop.charge")
    builders.cancelled(1, name="shop.charge")
    builders.enqueue(4, name="shop.charge")  # not finished: not counted
    assert store.roll_up_finished_jobs(lag=NOW) == 6
    assert _totals(name="shop.send", queue="mail") == {
        "completed": 3,
        "failed": 0,
        "cancelled": 0,
        "retried": 0,
    }
    assert _totals(name="shop.charge") == {
        "completed": 0,
        "failed": 2,
        "cancelled": 1,
        "retried": 0,
    }
    for row in TaskMinute.objects.all():
        assert row.minute.second == 0 and row.minute.microsecond == 0
        assert 0 <= row.run_ms_max <= row.run_ms_total
    assert store.rollup_watermark() is not None


@pytest.mark.django_db
def test_run_times_and_retries_come_from_the_job_rows():
    job = builders.completed(1, name="shop.slow")[0]
    # Test-only: a known run time and retry count, which no store path sets directly.
    Job.objects.filter(pk=job.pk).update(
        started_at=job.completed_at - timedelta(seconds=3, milliseconds=250), retry_count=2
    )
    store.roll_up_finished_jobs(lag=NOW)
    row = TaskMinute.objects.get(name="shop.slow")
    assert (row.run_ms_total, row.run_ms_max, row.retried) == (3250, 3250, 2)


@pytest.mark.django_db
def test_runs_are_incremental_and_never_count_a_job_twice():
    builders.completed(2, name="t")
    assert store.roll_up_finished_jobs(lag=NOW) == 2
    assert store.roll_up_finished_jobs(lag=NOW) == 0
    builders.completed(3, name="t")
    assert store.roll_up_finished_jobs(lag=NOW) == 3
    assert _totals(name="t")["completed"] == 5


@pytest.mark.django_db
def test_recently_finished_jobs_wait_for_the_lag():
    builders.completed(2, name="t")
    assert store.roll_up_finished_jobs(lag=timedelta(hours=1)) == 0
    assert store.roll_up_finished_jobs(lag=NOW) == 2


@pytest.mark.django_db
def test_small_batches_walk_through_ties_on_the_finish_time():
    jobs = builders.completed(11, name="t")
    # Test-only: every job finished at the same instant (a batched completion
    # writes one statement timestamp for all its rows).
    stamp = jobs[0].completed_at
    Job.objects.filter(pk__in=[j.pk for j in jobs]).update(completed_at=stamp)
    assert store.roll_up_finished_jobs(batch=3, max_batches=2, lag=NOW) == 6
    assert store.roll_up_finished_jobs(batch=3, lag=NOW) == 5
    assert _totals(name="t")["completed"] == 11


@pytest.mark.django_db(transaction=True)
def test_two_leaders_racing_count_every_job_exactly_once():
    builders.completed(60, name="race.ok")
    builders.failed(20, name="race.bad")
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def leader() -> None:
        try:
            start.wait(timeout=30)
            while store.roll_up_finished_jobs(batch=7, max_batches=1, lag=NOW):
                pass
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=leader) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == []
    assert _totals(name="race.ok")["completed"] == 60
    assert _totals(name="race.bad")["failed"] == 20


@pytest.mark.django_db
def test_buckets_past_retention_are_removed():
    builders.completed(1, name="t")
    store.roll_up_finished_jobs(lag=NOW)
    # Test-only: age the bucket beyond retention.
    TaskMinute.objects.update(minute=db.database_now() - timedelta(days=30))
    builders.completed(1, name="t")
    store.roll_up_finished_jobs(lag=NOW)
    assert TaskMinute.objects.count() == 1
    assert TaskMinute.objects.get().completed == 1


@pytest.mark.django_db
def test_the_state_counted_is_the_jobs_final_one():
    job = builders.failed(1, name="t")[0]
    store.roll_up_finished_jobs(lag=NOW)
    store.replay_jobs([job.pk])  # a replay is a new job: the original stays failed
    assert store.roll_up_finished_jobs(lag=NOW) == 0
    assert Job.objects.get(pk=job.pk).state == JobState.FAILED
    assert _totals(name="t")["failed"] == 1


@pytest.mark.django_db
def test_the_maintenance_leader_keeps_the_rollup_up_to_date():
    from dispatch_jobs.worker.config import build_config
    from dispatch_jobs.worker.maintenance import Maintenance

    jobs = builders.completed(2, name="kept.up")
    # Test-only: finished a minute ago, past the rollup's lag.
    Job.objects.filter(pk__in=[j.pk for j in jobs]).update(
        completed_at=db.database_now() - timedelta(minutes=1)
    )
    Maintenance(build_config({"worker_id": "leader"}), threading.Event()).run_once()
    assert _totals(name="kept.up")["completed"] == 2
