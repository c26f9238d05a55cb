"""The store's completion module: batched fenced writes and the retention purge."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from dispatch_jobs import store
from dispatch_jobs.models import Job, JobState, Usage
from dispatch_jobs.store import Completion, Spent
from tests.factories import JobFactory, running
from tests.store.support import db_now, snapshot

pytestmark = pytest.mark.django_db


def _held(**extra) -> Job:
    return JobFactory.create(
        **running("w1", 4, lease_expires_at=db_now(timedelta(minutes=1)), **extra)
    )


def test_batch_writes_held_jobs_and_reports_lost_ones_untouched():
    mine, stolen = _held(), _held()
    Job.objects.filter(pk=stolen.pk).update(lease_epoch=5, worker_id="w2")
    untouched = snapshot(stolen.pk)
    for job in (mine, stolen):
        job.state = JobState.COMPLETED
        job.return_value = {"ok": True}
        job.attempts = [{"attempt": 1, "status": "completed"}]
    lost = store.complete_leased_jobs("w1", [Completion(mine, 4), Completion(stolen, 4)])
    assert lost == {stolen.pk}
    mine.refresh_from_db()
    assert mine.state == JobState.COMPLETED and mine.return_value == {"ok": True}
    assert mine.completed_at is not None
    # The lease-owned columns are never written by a completion.
    assert (mine.worker_id, mine.lease_epoch) == ("w1", 4)
    assert snapshot(stolen.pk) == untouched


def test_a_retry_runs_after_database_now_plus_the_delay():
    job = _held()
    job.state = JobState.RETRYING
    job.retry_count = 1
    assert store.complete_leased_jobs("w1", [Completion(job, 4, timedelta(seconds=30))]) == set()
    job.refresh_from_db()
    assert timedelta(seconds=29) < job.run_at - db_now() <= timedelta(seconds=30)
    assert job.completed_at is None


def test_a_missing_row_counts_as_lost():
    job = _held()
    Job.objects.filter(pk=job.pk).delete()
    job.state = JobState.COMPLETED
    assert store.complete_leased_jobs("w1", [Completion(job, 4)]) == {job.pk}


def test_a_mixed_batch_writes_every_outcome_and_leaves_lost_leases_untouched():
    done, retry, dead, lost_epoch, lost_owner, lost_state = (_held() for _ in range(6))
    Job.objects.filter(pk=lost_epoch.pk).update(lease_epoch=5)
    Job.objects.filter(pk=lost_owner.pk).update(worker_id="w2")
    Job.objects.filter(pk=lost_state.pk).update(state=JobState.PENDING)
    untouched = {j.pk: snapshot(j.pk) for j in (lost_epoch, lost_owner, lost_state)}
    done.state, done.return_value = JobState.COMPLETED, [1, "two", {"3": None}]
    retry.state, retry.retry_count, retry.last_error = JobState.RETRYING, 1, "boom"
    dead.state, dead.last_error, dead.attempts = JobState.FAILED, "gone", [{"n": 1}]
    for job in (lost_epoch, lost_owner, lost_state):
        job.state = JobState.COMPLETED
    batch = [Completion(j, 4) for j in (done, dead, lost_epoch, lost_owner, lost_state)]
    batch.append(Completion(retry, 4, timedelta(seconds=60)))

    lost = store.complete_leased_jobs("w1", batch)

    assert lost == {lost_epoch.pk, lost_owner.pk, lost_state.pk}
    assert {pk: snapshot(pk) for pk in untouched} == untouched
    rows = {j.pk: j for j in Job.objects.filter(pk__in=[done.pk, retry.pk, dead.pk])}
    assert rows[done.pk].return_value == [1, "two", {"3": None}]
    assert rows[done.pk].completed_at is not None
    assert (rows[retry.pk].state, rows[retry.pk].retry_count) == (JobState.RETRYING, 1)
    assert rows[retry.pk].completed_at is None
    assert timedelta(seconds=59) < rows[retry.pk].run_at - db_now() <= timedelta(seconds=60)
    assert (rows[dead.pk].last_error, rows[dead.pk].attempts) == ("gone", [{"n": 1}])
    assert rows[dead.pk].completed_at is not None
    for row in rows.values():
        # The lease-owned columns are the grant's, the renewal's and the reclaim's.
        assert (row.worker_id, row.lease_epoch) == ("w1", 4)


def test_usage_is_written_with_each_written_outcome_and_never_for_a_lost_one():
    done = _held(name="t.done", queue="q1", scope_app_id="app", resources={"cpu": 500})
    retry, lost, unmeasured = _held(name="t.retry"), _held(), _held()
    Job.objects.filter(pk=lost.pk).update(lease_epoch=5)
    done.state, done.attempts = JobState.COMPLETED, [{"n": 1}, {"n": 2}]
    retry.state, retry.retry_count, retry.attempts = JobState.RETRYING, 1, [{"n": 1}]
    lost.state = unmeasured.state = JobState.COMPLETED
    spent = Spent(timedelta(milliseconds=1500), timedelta(milliseconds=20), "in-process")
    batch = [Completion(j, 4, spent=spent) for j in (done, lost)]
    batch += [Completion(retry, 4, timedelta(seconds=5), spent), Completion(unmeasured, 4)]

    assert store.complete_leased_jobs("w1", batch) == {lost.pk}

    rows = {u.job_id: u for u in Usage.objects.all()}
    assert set(rows) == {done.pk, retry.pk}
    usage = rows[done.pk]
    assert (usage.name, usage.queue, usage.status, usage.attempt) == (
        "t.done",
        "q1",
        JobState.COMPLETED,
        2,
    )
    assert (usage.wall_time, usage.cpu_time) == (spent.wall_time, spent.cpu_time)
    assert (usage.executor, usage.worker_id, usage.scope_app_id) == ("in-process", "w1", "app")
    assert usage.resources == {"cpu": 500}
    assert (rows[retry.pk].status, rows[retry.pk].attempt) == (JobState.RETRYING, 1)


def test_a_batch_is_one_statement_on_postgresql():
    if connection.vendor != "postgresql":
        pytest.skip("SQLite and MariaDB write a batch row by row (one UPDATE per job).")
    jobs = [_held() for _ in range(5)]
    for job in jobs:
        job.state = JobState.COMPLETED
    with CaptureQueriesContext(connection) as queries:
        assert store.complete_leased_jobs("w1", [Completion(j, 4) for j in jobs]) == set()
    statements = [q["sql"] for q in queries if "SAVEPOINT" not in q["sql"]]
    assert len(statements) == 1 and statements[0].lstrip().startswith("WITH")
    assert Job.objects.filter(state=JobState.COMPLETED).count() == 5


def test_purge_removes_finished_jobs_past_their_retention_only():
    old = db_now(-timedelta(days=10))
    gone = JobFactory.create(state=JobState.COMPLETED, completed_at=old)
    kept_failed = JobFactory.create(state=JobState.FAILED, completed_at=old)
    gone_failed = JobFactory.create(
        state=JobState.CANCELLED, completed_at=db_now(-timedelta(days=40))
    )
    fresh = JobFactory.create(state=JobState.COMPLETED, completed_at=db_now())
    pending = JobFactory.create()
    removed = store.purge_finished_jobs(
        completed_retention=timedelta(days=7), failed_retention=timedelta(days=30), limit=100
    )
    assert removed == 2
    left = set(Job.objects.values_list("pk", flat=True))
    assert left == {kept_failed.pk, fresh.pk, pending.pk}
    assert gone.pk not in left and gone_failed.pk not in left


def test_purge_honours_its_limit():
    for _ in range(3):
        JobFactory.create(state=JobState.COMPLETED, completed_at=db_now(-timedelta(days=10)))
    kwargs = {"completed_retention": timedelta(days=1), "failed_retention": timedelta(days=1)}
    assert store.purge_finished_jobs(limit=2, **kwargs) == 2
    assert store.purge_finished_jobs(limit=0, **kwargs) == 0
    assert store.purge_finished_jobs(limit=2, **kwargs) == 1
