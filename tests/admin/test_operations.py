"""store.operations: the operator actions' write seam, on every database."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection, connections

from dispatch_jobs import store
from dispatch_jobs.models import Job, JobState
from dispatch_jobs.store import ClaimOptions

from . import builders
from .locks import held_elsewhere


def _claim_all(queue: str = "default") -> list[Job]:
    return store.claim_jobs(ClaimOptions(queues=[queue], limit=100))


@pytest.mark.django_db
class TestReplay:
    def test_a_failed_job_is_replayed_as_a_new_linked_pending_job(self):
        original = builders.failed(
            1, payload={"args": [1], "kwargs": {"a": "b"}}, priority=4, scope_org_id="o1"
        )[0]
        report = store.replay_jobs([original.pk])
        assert report.done == [original.pk] and report.skipped == {}
        copy = Job.objects.get(pk=report.created[original.pk])
        assert copy.replay_of_id == original.pk
        assert (copy.state, copy.retry_count, copy.attempts, copy.last_error) == (
            JobState.PENDING,
            0,
            [],
            "",
        )
        assert (copy.name, copy.payload, copy.priority, copy.scope_org_id) == (
            original.name,
            original.payload,
            4,
            "o1",
        )
        original.refresh_from_db()
        assert original.state == JobState.FAILED  # history is not rewritten

    def test_a_cancelled_job_can_be_replayed(self):
        job = builders.cancelled(1)[0]
        assert store.replay_jobs([job.pk]).done == [job.pk]

    def test_a_second_replay_is_skipped_as_already_retried(self):
        job = builders.failed(1)[0]
        first = store.replay_jobs([job.pk])
        second = store.replay_jobs([job.pk])
        assert second.done == []
        assert second.skipped == {job.pk: f"already retried as #{first.created[job.pk]}"}
        assert Job.objects.filter(replay_of=job).count() == 1

    def test_other_states_and_missing_jobs_are_skipped_with_reasons(self):
        pending = builders.enqueue(1)[0]
        done = builders.completed(1)[0]
        held = builders.running(1)[0]
        report = store.replay_jobs([pending.pk, done.pk, held.pk, 999_999])
        assert report.done == []
        assert report.skipped[pending.pk].startswith("is pending; only failed or cancelled")
        assert report.skipped[done.pk].startswith("is completed")
        assert report.skipped[held.pk].startswith("is running")
        assert report.skipped[999_999] == "does not exist"
        assert "0 done, 4 skipped" in report.summary()


@pytest.mark.django_db(transaction=True)
def test_two_operators_replaying_at_once_create_exactly_one_job():
    job = builders.failed(1)[0]
    barrier = threading.Barrier(2)
    reports = []

    def replay() -> None:
        try:
            barrier.wait(timeout=30)
            reports.append(store.replay_jobs([job.pk]))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=replay) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(reports) == 2
    assert sorted(len(r.done) for r in reports) == [0, 1]
    loser = next(r for r in reports if not r.done)
    assert loser.skipped[job.pk].startswith("already retried")
    assert Job.objects.filter(replay_of=job).count() == 1


@pytest.mark.django_db
class TestCancel:
    def test_pending_and_retrying_jobs_are_cancelled_and_never_claimed(self):
        jobs = builders.enqueue(2, queue="c1")
        Job.objects.filter(pk=jobs[1].pk).update(state=JobState.RETRYING)
        report = store.cancel_jobs([j.pk for j in jobs])
        assert report.done == sorted(j.pk for j in jobs)
        assert set(Job.objects.filter(pk__in=report.done).values_list("state", flat=True)) == {
            JobState.CANCELLED
        }
        assert Job.objects.filter(pk__in=report.done, completed_at__isnull=True).count() == 0
        assert _claim_all("c1") == []

    def test_finished_jobs_are_skipped_and_running_ones_only_asked_to_stop(self):
        held = builders.running(1)[0]
        done = builders.completed(1)[0]
        report = store.cancel_jobs([held.pk, done.pk])
        assert report.done == [] and report.requested == [held.pk]
        assert list(report.skipped) == [done.pk]
        assert report.skipped[done.pk].startswith("is completed")
        held.refresh_from_db()
        # Still its worker's: the worker stops it and writes it cancelled.
        assert (held.state, held.worker_id) == (JobState.RUNNING, builders.WORKER)
        assert held.cancel_requested_at is not None


@pytest.mark.django_db(transaction=True)
def test_cancel_skips_a_row_a_claimer_has_locked():
    if connection.vendor == "sqlite":
        pytest.skip(
            "SQLite has no row locks: a claim holds the whole database's write lock, so a "
            "cancel waits for it to finish instead of skipping the row"
        )
    job = builders.enqueue(1, queue="locked")[0]

    def claimer() -> None:
        list(Job.objects.select_for_update().filter(pk=job.pk))

    with held_elsewhere(claimer):
        report = store.cancel_jobs([job.pk])
    assert report.done == []
    assert report.skipped[job.pk].startswith("is busy")
    assert Job.objects.get(pk=job.pk).state == JobState.PENDING


@pytest.mark.django_db
class TestRunNowAndDelete:
    def test_run_now_makes_a_scheduled_job_due_by_the_database_clock(self):
        from dispatch_jobs.store import db

        job = builders.enqueue(1, queue="later")[0]
        Job.objects.filter(pk=job.pk).update(run_at=db.now_plus(timedelta(hours=1)))
        assert _claim_all("later") == []
        report = store.run_jobs_now([job.pk])
        assert report.done == [job.pk]
        assert [j.pk for j in _claim_all("later")] == [job.pk]

    def test_run_now_skips_finished_jobs(self):
        done = builders.completed(1)[0]
        assert store.run_jobs_now([done.pk]).skipped[done.pk].startswith("is completed")

    def test_delete_removes_all_but_running_jobs(self):
        done = builders.completed(1)[0]
        failed = builders.failed(1)[0]
        replay = store.replay_jobs([failed.pk]).created[failed.pk]
        held = builders.running(1)[0]
        report = store.delete_jobs([done.pk, failed.pk, held.pk, 424_242])
        assert report.done == sorted([done.pk, failed.pk])
        assert report.skipped == {
            held.pk: "is running; a worker holds it",
            424_242: "does not exist",
        }
        assert Job.objects.filter(pk__in=[done.pk, failed.pk]).count() == 0
        assert Job.objects.get(pk=replay).replay_of_id is None  # the link is let go
        assert Job.objects.filter(pk=held.pk).exists()
