"""The store's completion module: batched fenced writes and the retention purge."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from dispatch_jobs import store
from dispatch_jobs.models import Job, JobState, Usage
from dispatch_jobs.store import Cancelled, Completed, Failed, Retry, Settled, Spent, Transition
from tests.factories import JobFactory, running
from tests.store.support import db_now, snapshot

pytestmark = pytest.mark.django_db


def _held(**extra) -> Job:
    return JobFactory.create(
        **running("w1", 4, lease_expires_at=db_now(timedelta(minutes=1)), **extra)
    )


def _settled(job: Job, transition: Transition, spent: Spent | None = None, n: int = 1) -> Settled:
    """The write of ``job``'s attempt number ``n`` under epoch 4."""
    return Settled(job, 4, transition, {"attempt": n}, spent)


def test_batch_writes_held_jobs_and_reports_lost_ones_untouched():
    mine, stolen = _held(), _held()
    Job.objects.filter(pk=stolen.pk).update(lease_epoch=5, worker_id="w2")
    untouched = snapshot(stolen.pk)
    done = Completed({"ok": True})
    lost = store.complete_leased_jobs("w1", [_settled(mine, done), _settled(stolen, done)])
    assert lost == {stolen.pk}
    mine.refresh_from_db()
    assert mine.state == JobState.COMPLETED and mine.return_value == {"ok": True}
    assert mine.attempts == [{"attempt": 1}] and mine.completed_at is not None
    # The lease-owned columns are never written by a completion.
    assert (mine.worker_id, mine.lease_epoch) == ("w1", 4)
    assert snapshot(stolen.pk) == untouched


def test_a_retry_runs_after_database_now_plus_the_delay():
    job = _held()
    retry = Retry(timedelta(seconds=30), "Boom: once")
    assert store.complete_leased_jobs("w1", [_settled(job, retry)]) == set()
    job.refresh_from_db()
    assert (job.state, job.retry_count, job.last_error) == (JobState.RETRYING, 1, "Boom: once")
    assert timedelta(seconds=29) < job.run_at - db_now() <= timedelta(seconds=30)
    assert job.completed_at is None


def test_a_cancelled_job_is_finished_with_its_reason():
    job = _held()
    assert store.complete_leased_jobs("w1", [_settled(job, Cancelled("by ops"))]) == set()
    job.refresh_from_db()
    assert (job.state, job.last_error) == (JobState.CANCELLED, "by ops")
    assert job.completed_at is not None and job.return_value is None


def test_a_missing_row_counts_as_lost():
    job = _held()
    Job.objects.filter(pk=job.pk).delete()
    assert store.complete_leased_jobs("w1", [_settled(job, Completed())]) == {job.pk}


def test_a_mixed_batch_writes_every_outcome_and_leaves_lost_leases_untouched():
    done, retry, dead, lost_epoch, lost_owner, lost_state = (_held() for _ in range(6))
    Job.objects.filter(pk=lost_epoch.pk).update(lease_epoch=5)
    Job.objects.filter(pk=lost_owner.pk).update(worker_id="w2")
    Job.objects.filter(pk=lost_state.pk).update(state=JobState.PENDING)
    untouched = {j.pk: snapshot(j.pk) for j in (lost_epoch, lost_owner, lost_state)}
    batch = [
        _settled(done, Completed([1, "two", {"3": None}])),
        _settled(dead, Failed("gone", permanent=True)),
        _settled(retry, Retry(timedelta(seconds=60), "boom")),
    ]
    batch += [_settled(j, Completed()) for j in (lost_epoch, lost_owner, lost_state)]

    lost = store.complete_leased_jobs("w1", batch)

    assert lost == {lost_epoch.pk, lost_owner.pk, lost_state.pk}
    assert {pk: snapshot(pk) for pk in untouched} == untouched
    rows = {j.pk: j for j in Job.objects.filter(pk__in=[done.pk, retry.pk, dead.pk])}
    assert rows[done.pk].return_value == [1, "two", {"3": None}]
    assert rows[done.pk].completed_at is not None
    assert (rows[retry.pk].state, rows[retry.pk].retry_count) == (JobState.RETRYING, 1)
    assert rows[retry.pk].completed_at is None
    assert timedelta(seconds=59) < rows[retry.pk].run_at - db_now() <= timedelta(seconds=60)
    assert (rows[dead.pk].state, rows[dead.pk].last_error) == (JobState.FAILED, "gone")
    assert rows[dead.pk].attempts == [{"attempt": 1}]
    assert rows[dead.pk].completed_at is not None
    for row in rows.values():
        # The lease-owned columns are the grant's, the renewal's and the reclaim's.
        assert (row.worker_id, row.lease_epoch) == ("w1", 4)


def test_an_attempt_is_appended_to_the_log_the_job_was_claimed_with():
    job = _held(attempts=[{"attempt": 1, "status": "retrying"}], retry_count=1)
    batch = [_settled(job, Completed("ok"), n=2)]
    assert store.complete_leased_jobs("w1", batch) == set()
    job.refresh_from_db()
    assert job.attempts == [{"attempt": 1, "status": "retrying"}, {"attempt": 2}]
    assert job.retry_count == 1  # a success spends no retry


def test_the_claimed_job_is_never_changed_by_its_outcome():
    job = _held()
    before = dict(job.__dict__)
    settled = _settled(job, Retry(timedelta(seconds=5), "boom"))
    after = settled.applied(db_now())
    assert (after.state, after.retry_count, after.last_error) == ("retrying", 1, "boom")
    store.complete_leased_jobs("w1", [settled])
    assert {k: v for k, v in job.__dict__.items() if k != "_state"} == {
        k: v for k, v in before.items() if k != "_state"
    }


def test_usage_is_written_with_each_written_outcome_and_never_for_a_lost_one():
    done = _held(name="t.done", queue="q1", scope_app_id="app", resources={"cpu": 500})
    done_before = [{"n": 1}]
    Job.objects.filter(pk=done.pk).update(attempts=done_before)
    done.attempts = done_before
    retry, lost, unmeasured = _held(name="t.retry"), _held(), _held()
    Job.objects.filter(pk=lost.pk).update(lease_epoch=5)
    spent = Spent(timedelta(milliseconds=1500), timedelta(milliseconds=20), "in-process")
    batch = [_settled(done, Completed(), spent, n=2), _settled(lost, Completed(), spent)]
    batch += [
        _settled(retry, Retry(timedelta(seconds=5), "boom"), spent),
        _settled(unmeasured, Completed()),
    ]

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
    with CaptureQueriesContext(connection) as queries:
        batch = [_settled(j, Completed()) for j in jobs]
        assert store.complete_leased_jobs("w1", batch) == set()
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


def test_usage_keeps_what_the_subprocess_rung_measured():
    measured, plain = _held(name="t.child"), _held(name="t.thread")
    child = Spent(
        timedelta(milliseconds=40), timedelta(milliseconds=30), "subprocess", 90 * 2**20, 2**20
    )
    thread = Spent(timedelta(milliseconds=40), timedelta(milliseconds=30), "in-process")
    batch = [_settled(measured, Completed(), child), _settled(plain, Completed(), thread)]
    assert store.complete_leased_jobs("w1", batch) == set()
    rows = {u.job_id: u for u in Usage.objects.all()}
    assert (rows[measured.pk].executor, rows[measured.pk].peak_rss) == ("subprocess", 90 * 2**20)
    assert rows[measured.pk].disk_written == 2**20
    # The in-process rung cannot separate a thread's memory or writes: zeros.
    assert (rows[plain.pk].peak_rss, rows[plain.pk].disk_written) == (0, 0)
    assert rows[plain.pk].executor == "in-process"
