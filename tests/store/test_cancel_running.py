"""Cancelling a running job: the store marks it, its worker stops it.

The mark never touches the lease: the job stays its worker's until that worker
writes it cancelled (fenced, like any outcome), or the reclaim does when the
worker is gone.
"""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from django.db import connection, connections

from dispatch_jobs import store
from dispatch_jobs.models import Job, JobState
from dispatch_jobs.store import Cancelled, Settled, operations
from tests.admin.locks import held_elsewhere
from tests.factories import JobFactory, running
from tests.store.support import db_now, snapshot

pytestmark = pytest.mark.django_db


def _held(worker_id: str = "w1", ttl: timedelta = timedelta(minutes=1)) -> Job:
    return JobFactory.create(**running(worker_id, 4, lease_expires_at=db_now(ttl)))


def test_cancel_asks_a_running_job_to_stop_and_leaves_its_lease_alone() -> None:
    job, pending = _held(), JobFactory.create()
    before = snapshot(job.pk)
    report = store.cancel_jobs([job.pk, pending.pk], by="alice")
    assert (report.done, report.requested, report.skipped) == ([pending.pk], [job.pk], {})
    assert "1 running asked to stop" in report.summary()
    after = snapshot(job.pk)
    assert after["state"] == JobState.RUNNING and after["cancel_requested_by"] == "alice"
    for column in ("worker_id", "lease_epoch", "lease_expires_at", "attempts"):
        assert after[column] == before[column], column
    pending.refresh_from_db()
    assert (pending.state, pending.cancel_requested_by) == (JobState.CANCELLED, "alice")


def test_the_holding_worker_reads_the_request_and_only_it() -> None:
    mine, other = _held("w1"), _held("w2")
    quiet = _held("w1")
    store.cancel_jobs([mine.pk, other.pk], by="bob")
    assert store.cancel_requests("w1", [mine.pk, quiet.pk, other.pk]) == {mine.pk: "bob"}
    assert store.cancel_requests("w1", []) == {}


def test_a_second_request_keeps_the_first_requester() -> None:
    job = _held()
    store.cancel_jobs([job.pk], by="first")
    report = store.cancel_jobs([job.pk], by="second")
    assert report.requested == [job.pk]
    assert store.cancel_requests("w1", [job.pk]) == {job.pk: "first"}


def test_the_worker_writes_it_cancelled_with_who_asked() -> None:
    job = _held()
    store.cancel_jobs([job.pk], by="carol")
    message = store.cancel_message("carol")
    record = {"attempt": 1, "status": "cancelled"}
    assert store.complete_leased_jobs("w1", [Settled(job, 4, Cancelled(message), record)]) == set()
    job.refresh_from_db()
    assert (job.state, job.last_error) == (JobState.CANCELLED, message)
    assert "carol" in job.last_error and job.completed_at is not None
    assert job.attempts == [record]


def test_a_lapsed_lease_of_a_job_asked_to_stop_finishes_it_cancelled() -> None:
    job = _held(ttl=timedelta(seconds=-5))
    store.cancel_jobs([job.pk], by="dave")
    [reclaimed] = store.reclaim_expired_leases(limit=10)
    assert reclaimed.pk == job.pk
    job.refresh_from_db()
    assert job.state == JobState.CANCELLED and "dave" in job.last_error
    assert job.attempts[-1]["status"] == "cancelled" and job.worker_id == ""
    assert store.claim_jobs(store.ClaimOptions(queues=[job.queue], limit=5)) == []


@pytest.mark.django_db(transaction=True)
def test_a_running_row_its_worker_holds_for_a_moment_is_still_asked_to_stop() -> None:
    """A worker renewing the lease or writing the outcome locks the row for a
    moment: the cancel tries again shortly instead of dropping the request (seen:
    a MariaDB renewal beside the admin's Cancel left the job running)."""
    if connection.vendor == "sqlite":
        pytest.skip("SQLite has no row locks: a writer holds the whole database")
    job = _held()

    def lock_then_let_go() -> None:
        list(Job.objects.select_for_update().filter(pk=job.pk).values_list("pk"))

    with held_elsewhere(lock_then_let_go):
        done: dict[str, object] = {}

        def ask() -> None:
            try:
                done["report"] = store.cancel_jobs([job.pk])
            finally:
                connections.close_all()

        asker = threading.Thread(target=ask)
        asker.start()
        time.sleep(0.3)  # the first tries meet the lock
    asker.join(timeout=30)
    report = done["report"]
    assert (report.requested, report.skipped) == ([job.pk], {})  # type: ignore[attr-defined]
    assert Job.objects.get(pk=job.pk).cancel_requested_at is not None


@pytest.mark.django_db(transaction=True)
def test_a_row_held_throughout_is_reported_busy_not_as_ineligible(monkeypatch) -> None:
    if connection.vendor == "sqlite":
        pytest.skip("SQLite has no row locks: a writer holds the whole database")
    monkeypatch.setattr(operations, "STOP_REQUEST_TRIES", 3)
    job = _held()
    with held_elsewhere(
        lambda: list(Job.objects.select_for_update().filter(pk=job.pk).values_list("pk"))
    ):
        report = store.cancel_jobs([job.pk])
    assert report.requested == []
    assert report.skipped == {job.pk: "is running and its worker held it throughout; try again"}
