"""Leases: renewal, the fenced write (update_leased_job) and hand-back."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

import pytest
from django.db import DEFAULT_DB_ALIAS, connection, connections

from dispatch_jobs import store
from dispatch_jobs.exceptions import JobNotFound, LeaseLost
from dispatch_jobs.models import Job, JobState, Quarantine
from tests.admin.locks import held_elsewhere
from tests.factories import JobFactory, running
from tests.store.support import claim, db_now, moment, snapshot

pytestmark = pytest.mark.django_db

TTL = timedelta(seconds=30)


def leased(worker_id: str = "w1", epoch: int = 1) -> Job:
    """A running job held by ``worker_id`` at ``epoch``, lease valid for a minute."""
    return JobFactory.create(
        **running(worker_id, epoch, lease_expires_at=db_now(timedelta(minutes=1)))
    )


def claimed() -> Job:
    """A fresh job, claimed by w1 with a real lease grant."""
    JobFactory.create()
    (job,) = claim(worker_id="w1", lease_ttl=TTL)
    return job


# -- renew_lease --------------------------------------------------------------------------


def test_renew_lease_extends_expiry_from_the_database_clock() -> None:
    job = leased()
    before = db_now()
    store.renew_lease(job.pk, "w1", 1, timedelta(hours=1))
    row = Job.objects.get(pk=job.pk)
    expiry = moment(job.pk, "lease_expires_at")
    assert before + timedelta(hours=1) - timedelta(seconds=1) <= expiry
    assert expiry <= db_now() + timedelta(hours=1)
    assert row.heartbeat_at is not None
    assert row.lease_epoch == 1 and row.worker_id == "w1"


@pytest.mark.parametrize(
    ("worker_id", "epoch", "state"),
    [
        ("w2", 1, JobState.RUNNING),  # another worker holds it
        ("w1", 2, JobState.RUNNING),  # a newer epoch (it was reclaimed and re-granted)
        ("w1", 1, JobState.PENDING),  # reclaimed, not yet re-claimed
        ("w1", 1, JobState.COMPLETED),
    ],
)
def test_renew_lease_is_lost_when_the_fence_fails(worker_id: str, epoch: int, state: str) -> None:
    job = JobFactory.create(
        **running(worker_id, epoch, lease_expires_at=db_now(timedelta(minutes=1)))
    )
    Job.objects.filter(pk=job.pk).update(state=state)
    before = snapshot(job.pk)
    with pytest.raises(LeaseLost, match="lost"):
        store.renew_lease(job.pk, "w1", 1, TTL)
    assert snapshot(job.pk) == before


def test_renew_leases_renews_held_and_reports_lost() -> None:
    held = leased("w1", 1)
    stolen = leased("w2", 1)
    stale = leased("w1", 3)
    lost = store.renew_leases(
        "w1",
        [(held.pk, 1, timedelta(hours=1)), (stolen.pk, 1, TTL), (stale.pk, 2, TTL)],
    )
    assert lost == {stolen.pk, stale.pk}
    assert moment(held.pk, "lease_expires_at") > db_now(timedelta(minutes=59))
    assert moment(stale.pk, "lease_expires_at") < db_now(timedelta(minutes=2))


def test_renew_leases_with_different_ttls() -> None:
    short, long = leased(), leased()
    assert store.renew_leases("w1", [(short.pk, 1, TTL), (long.pk, 1, timedelta(hours=2))]) == set()
    assert moment(short.pk, "lease_expires_at") < db_now(timedelta(minutes=1))
    assert moment(long.pk, "lease_expires_at") > db_now(timedelta(hours=1))


def test_renew_leases_of_nothing_is_nothing() -> None:
    assert store.renew_leases("w1", []) == set()


# -- update_leased_job --------------------------------------------------------------------------


def test_update_leased_job_writes_the_callers_columns() -> None:
    job = claimed()
    job.state = JobState.COMPLETED
    job.return_value = {"ok": True}
    job.last_error = "none"
    job.retry_count = 2
    job.attempts = [{"attempt": 1, "status": "completed"}]
    job.priority = 7
    store.update_leased_job(job, "w1", job.lease_epoch)
    row = Job.objects.get(pk=job.pk)
    assert row.state == JobState.COMPLETED
    assert row.return_value == {"ok": True}
    assert (row.last_error, row.retry_count, row.priority) == ("none", 2, 7)
    assert row.attempts == [{"attempt": 1, "status": "completed"}]


@pytest.mark.parametrize(
    ("column", "stale_value"),
    [
        ("worker_id", "someone-else"),
        ("lease_expires_at", None),
        ("lease_epoch", 0),
        ("heartbeat_at", None),
    ],
)
def test_update_leased_job_never_writes_a_lease_column(column: str, stale_value: object) -> None:
    """The caller's snapshot is stale; writing it back would roll the lease back."""
    job = claimed()
    epoch = job.lease_epoch
    # The lease moves on after the snapshot: a renewal pushes expiry and heartbeat.
    store.renew_lease(job.pk, "w1", epoch, timedelta(hours=1))
    renewed = snapshot(job.pk)
    setattr(job, column, stale_value)
    job.last_error = "progress"
    store.update_leased_job(job, "w1", epoch)
    row = snapshot(job.pk)
    assert row["last_error"] == "progress"
    assert row[column] == renewed[column]


def test_update_leased_job_stale_expiry_does_not_roll_back() -> None:
    job = claimed()
    store.renew_lease(job.pk, "w1", job.lease_epoch, timedelta(hours=1))
    store.update_leased_job(job, "w1", job.lease_epoch)  # job.lease_expires_at is +30s
    assert moment(job.pk, "lease_expires_at") > db_now(timedelta(minutes=59))


@pytest.mark.parametrize(
    ("worker_id", "epoch_delta"),
    [("w2", 0), ("w1", -1), ("w1", 1)],
)
def test_update_leased_job_lost_leaves_the_row_unchanged(worker_id: str, epoch_delta: int) -> None:
    job = claimed()
    before = snapshot(job.pk)
    job.state = JobState.COMPLETED
    job.last_error = "should not land"
    with pytest.raises(LeaseLost):
        store.update_leased_job(job, worker_id, job.lease_epoch + epoch_delta)
    assert snapshot(job.pk) == before


def test_update_leased_job_lost_after_reclaim() -> None:
    job = JobFactory.create(**running("w1", 1, lease_expires_at=db_now(-timedelta(seconds=5))))
    store.reclaim_expired_leases(10)
    before = snapshot(job.pk)
    job.state = JobState.COMPLETED
    with pytest.raises(LeaseLost):
        store.update_leased_job(job, "w1", 1)
    assert snapshot(job.pk) == before


def test_update_leased_job_of_a_deleted_row_is_job_not_found() -> None:
    job = claimed()
    store.delete_job(job.pk)
    with pytest.raises(JobNotFound, match=str(job.pk)):
        store.update_leased_job(job, "w1", job.lease_epoch)


# -- release_leases (graceful drain) --------------------------------------------------------------


def test_release_leases_returns_held_jobs_to_pending_as_an_eviction() -> None:
    job = leased("w1", 2)
    (released,) = store.release_leases("w1", [(job.pk, 2)])
    row = Job.objects.get(pk=job.pk)
    assert released.pk == job.pk
    assert row.state == JobState.PENDING
    assert (row.worker_id, row.lease_expires_at, row.heartbeat_at) == ("", None, None)
    assert (row.lease_epoch, row.evict_count, row.retry_count) == (3, 1, 0)


def test_release_leases_skips_jobs_no_longer_held() -> None:
    stolen = leased("w2", 1)
    stale = leased("w1", 5)
    before = [snapshot(stolen.pk), snapshot(stale.pk)]
    assert store.release_leases("w1", [(stolen.pk, 1), (stale.pk, 4)]) == []
    assert [snapshot(stolen.pk), snapshot(stale.pk)] == before


def test_release_leases_of_nothing_is_nothing() -> None:
    assert store.release_leases("w1", []) == []


def test_release_leases_clears_the_start_and_never_counts_towards_poison() -> None:
    job = JobFactory.create(
        **running("w1", 2, lease_expires_at=db_now(TTL), started_at=db_now(-TTL)),
        quarantine=Quarantine.ALONE,
    )
    (released,) = store.release_leases("w1", [(job.pk, 2)])
    assert released.started_at is None and released.lone_evictions == 0
    assert released.quarantine == Quarantine.SUSPECT  # running alone proved nothing yet
    assert released.attempts[-1]["status"] == "handed_back"


@contextmanager
def other_connection_locks(job_id: int) -> Iterator[None]:
    """Hold the row lock of ``job_id`` from a second, real connection."""
    other = connections.create_connection(DEFAULT_DB_ALIAS)
    try:
        other.set_autocommit(False)
        with other.cursor() as cursor:
            table = other.ops.quote_name(Job._meta.db_table)
            cursor.execute(f"SELECT id FROM {table} WHERE id = %s FOR UPDATE", [job_id])
        yield
    finally:
        other.rollback()
        other.close()


@pytest.mark.django_db(transaction=True)
def test_renew_leases_skips_a_row_locked_elsewhere_and_renews_the_others() -> None:
    """One locked row never stalls the batch: it is neither renewed nor lost."""
    if not connection.features.has_select_for_update_skip_locked:
        pytest.skip(f"{connection.vendor} locks the whole database, not rows: no row to skip")
    held = [leased(), leased()]
    with other_connection_locks(held[0].pk):
        lost = store.renew_leases("w1", [(job.pk, 1, timedelta(hours=1)) for job in held])
    assert lost == set()
    assert moment(held[1].pk, "lease_expires_at") > db_now(timedelta(minutes=30))
    assert moment(held[0].pk, "lease_expires_at") < db_now(timedelta(minutes=30))


def test_renew_leases_reports_a_deleted_row_as_lost() -> None:
    job = leased()
    gone = leased()
    Job.objects.filter(pk=gone.pk).delete()
    lost = store.renew_leases("w1", [(job.pk, 1, TTL), (gone.pk, 1, TTL)])
    assert lost == {gone.pk}


@pytest.mark.django_db(transaction=True)
def test_release_leases_skips_a_row_locked_elsewhere_and_hands_back_the_others() -> None:
    if not connection.features.has_select_for_update_skip_locked:
        pytest.skip(f"{connection.vendor} locks the whole database, not rows: no row to skip")
    locked, free = leased(), leased()
    with other_connection_locks(locked.pk):
        returned = store.release_leases("w1", [(locked.pk, 1), (free.pk, 1)])
    assert [job.pk for job in returned] == [free.pk]
    assert Job.objects.get(pk=locked.pk).state == JobState.RUNNING  # its lease will lapse


def test_renew_leases_a_refused_ttl_leaves_its_rows_and_renews_the_others() -> None:
    """An expiry the database cannot represent is that lease's problem alone."""
    absurd, ordinary = leased(), leased()
    before = moment(absurd.pk, "lease_expires_at")
    lost = store.renew_leases(
        "w1", [(absurd.pk, 1, timedelta(days=999_999_999)), (ordinary.pk, 1, timedelta(hours=1))]
    )
    assert lost == set()
    assert moment(ordinary.pk, "lease_expires_at") > db_now(timedelta(minutes=30))
    assert moment(absurd.pk, "lease_expires_at") == before


@pytest.mark.django_db(transaction=True)
def test_a_hand_back_tries_again_a_row_locked_for_a_moment() -> None:
    """A drain hands back a job whose row its own heartbeat (or a completion) holds
    for a moment: the hand-back tries again shortly instead of leaving it to lapse
    (seen: one of two long jobs left running after a drain on MariaDB)."""
    if connection.vendor == "sqlite":
        pytest.skip("SQLite has no row locks: a writer holds the whole database")
    job = JobFactory.create(**running("w1", 3, lease_expires_at=db_now(timedelta(minutes=1))))
    done: dict[str, list[Job]] = {}

    def hand_back() -> None:
        try:
            done["released"] = store.release_leases("w1", [(job.pk, 3)])
        finally:
            connections.close_all()

    with held_elsewhere(
        lambda: list(Job.objects.select_for_update().filter(pk=job.pk).values_list("pk"))
    ):
        worker = threading.Thread(target=hand_back)
        worker.start()
        time.sleep(0.2)  # the first tries meet the lock
    worker.join(timeout=30)
    assert [j.pk for j in done["released"]] == [job.pk]
    assert Job.objects.get(pk=job.pk).state == JobState.PENDING
