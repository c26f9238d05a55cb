"""Reclaim of expired leases: the fence, the counters, the unleased grace."""

from __future__ import annotations

from datetime import timedelta

import pytest

from dispatch_jobs import store
from dispatch_jobs.models import Job, JobState, Quarantine
from tests.factories import JobFactory, running
from tests.store.support import capture, claim, db_now, ids, snapshot

pytestmark = pytest.mark.django_db

SECOND = timedelta(seconds=1)


def expired(worker_id: str = "dead", epoch: int = 1, **extra: object) -> Job:
    return JobFactory.create(
        **running(worker_id, epoch, lease_expires_at=db_now(-5 * SECOND), **extra)
    )


def test_expired_lease_returns_to_pending_fenced_and_counted() -> None:
    job = expired(epoch=3, retry_count=2, evict_count=1, heartbeat_at=db_now(-60 * SECOND))
    (reclaimed,) = store.reclaim_expired_leases(10)
    row = Job.objects.get(pk=job.pk)
    assert reclaimed.pk == job.pk and reclaimed.lease_epoch == 4
    assert row.state == JobState.PENDING
    assert row.lease_epoch == 4  # the old holder is fenced out
    assert row.evict_count == 2  # infrastructure, counted apart
    assert row.retry_count == 2  # never charged to the retry budget
    assert (row.worker_id, row.lease_expires_at, row.heartbeat_at) == ("", None, None)


def test_unexpired_lease_is_not_reclaimed() -> None:
    job = JobFactory.create(**running(lease_expires_at=db_now(5 * SECOND)))
    before = snapshot(job.pk)
    assert store.reclaim_expired_leases(10) == []
    assert snapshot(job.pk) == before


def test_expiry_uses_the_database_clock() -> None:
    """A lease a few seconds either side of the DATABASE's now decides."""
    gone = JobFactory.create(**running(lease_expires_at=db_now(-3 * SECOND)))
    JobFactory.create(**running(lease_expires_at=db_now(3 * SECOND)))
    assert ids(store.reclaim_expired_leases(10)) == [gone.pk]


@pytest.mark.parametrize("state", [JobState.PENDING, JobState.COMPLETED, JobState.FAILED])
def test_only_running_jobs_are_reclaimed(state: str) -> None:
    JobFactory.create(state=state, lease_expires_at=db_now(-5 * SECOND), worker_id="dead")
    assert store.reclaim_expired_leases(10) == []


@pytest.mark.parametrize("limit", [0, -1])
def test_non_positive_limit_reclaims_nothing_and_runs_no_query(limit: int) -> None:
    job = expired()
    with capture() as ctx:
        assert store.reclaim_expired_leases(limit) == []
    assert ctx.captured_queries == []
    assert Job.objects.get(pk=job.pk).state == JobState.RUNNING


def test_limit_bounds_one_pass() -> None:
    for _ in range(5):
        expired()
    assert len(store.reclaim_expired_leases(3)) == 3
    assert len(store.reclaim_expired_leases(3)) == 2
    assert Job.objects.filter(state=JobState.PENDING).count() == 5


def test_unleased_running_job_is_adopted_only_after_silence() -> None:
    grace = timedelta(minutes=5)
    quiet = JobFactory.create(state=JobState.RUNNING, heartbeat_at=db_now(-grace - 5 * SECOND))
    beating = JobFactory.create(state=JobState.RUNNING, heartbeat_at=db_now(-grace + 5 * SECOND))
    (adopted,) = store.reclaim_expired_leases(10, unleased_grace=grace)
    assert adopted.pk == quiet.pk
    assert adopted.state == JobState.PENDING and adopted.evict_count == 1
    assert Job.objects.get(pk=beating.pk).state == JobState.RUNNING


def test_unleased_silence_counts_from_the_start_when_never_heartbeaten() -> None:
    grace = timedelta(minutes=5)
    old = JobFactory.create(state=JobState.RUNNING, started_at=db_now(-grace - 5 * SECOND))
    JobFactory.create(state=JobState.RUNNING, started_at=db_now(-grace + 5 * SECOND))
    assert ids(store.reclaim_expired_leases(10, unleased_grace=grace)) == [old.pk]


def test_unleased_grace_defaults_to_the_setting() -> None:
    JobFactory.create(state=JobState.RUNNING, heartbeat_at=db_now(-timedelta(minutes=4)))
    assert store.reclaim_expired_leases(10) == []  # default grace is 5 minutes
    old = JobFactory.create(state=JobState.RUNNING, heartbeat_at=db_now(-timedelta(minutes=6)))
    assert ids(store.reclaim_expired_leases(10)) == [old.pk]


def test_expired_lease_clears_the_start_and_records_it_in_the_attempts_log() -> None:
    """The seed's reclaim clears worker, StartedAt, HeartbeatAt and expiry; the
    attempt's start survives as an entry naming the worker and why."""
    started = db_now(-60 * SECOND)
    job = expired(worker_id="dead-1", started_at=started, attempts=[{"status": "retrying"}])
    store.reclaim_expired_leases(10)
    row = Job.objects.get(pk=job.pk)
    assert row.started_at is None and row.heartbeat_at is None
    assert row.lease_expires_at is None and row.worker_id == ""
    first, entry = row.attempts
    assert first == {"status": "retrying"}  # the log so far is kept as it was
    assert entry["attempt"] == 2 and entry["status"] == "evicted"
    assert entry["worker_id"] == "dead-1"
    assert entry["exception_class"] == "dispatch_jobs.exceptions.WorkerLost"
    assert "lease lapsed" in entry["message"]
    assert entry["started_at"] == started.isoformat()


def test_a_lapse_while_sharing_makes_a_suspect_and_never_counts_towards_poison() -> None:
    shared = expired(evict_count=10)
    store.reclaim_expired_leases(10, max_evictions=2)
    row = Job.objects.get(pk=shared.pk)
    assert row.state == JobState.PENDING and row.quarantine == Quarantine.SUSPECT
    assert row.lone_evictions == 0 and row.evict_count == 11
    assert "sharing its worker" in row.attempts[-1]["message"]


def test_a_lapse_while_alone_counts_and_more_than_max_evictions_fails_as_poison() -> None:
    poisoned = expired(quarantine=Quarantine.ALONE, lone_evictions=2, evict_count=3)
    counted = expired(quarantine=Quarantine.ALONE, lone_evictions=1, evict_count=2)
    store.reclaim_expired_leases(10, max_evictions=2)
    row = Job.objects.get(pk=poisoned.pk)
    assert row.state == JobState.FAILED and "failed as poison" in row.last_error
    assert row.last_error.startswith("WorkerLost: ")
    assert row.completed_at is not None and row.evict_count == 4 and row.retry_count == 0
    assert row.lone_evictions == 3 and row.attempts[-1]["status"] == "failed"
    again = Job.objects.get(pk=counted.pk)
    assert again.state == JobState.PENDING and again.lone_evictions == 2
    assert again.quarantine == Quarantine.SUSPECT


def test_an_unreadable_attempts_column_is_kept_as_an_entry_on_eviction() -> None:
    job = expired(attempts={"not": "a list"})
    store.reclaim_expired_leases(10)
    unreadable, entry = Job.objects.get(pk=job.pk).attempts
    assert unreadable["status"] == "unreadable" and "'not'" in unreadable["message"]
    assert entry["status"] == "evicted"


def test_reclaimed_job_can_be_claimed_again_at_the_next_epoch() -> None:
    job = expired(epoch=1)
    store.reclaim_expired_leases(10)
    (again,) = store.claim_jobs(
        store.ClaimOptions(queues=["default"], limit=1, worker_id="w2", lease_ttl=60 * SECOND)
    )
    assert again.pk == job.pk and again.lease_epoch == 3 and again.worker_id == "w2"


def test_expiry_written_by_the_claim_is_compared_on_the_same_clock() -> None:
    """A grant whose expiry (database now + ttl) is already past is reclaimable at
    once: the expiry the claim writes and the now reclaim reads are one clock."""
    job = JobFactory.create()
    claim(worker_id="w1", lease_ttl=-5 * SECOND)
    assert ids(store.reclaim_expired_leases(10)) == [job.pk]


def test_expiry_written_by_a_renewal_is_compared_on_the_same_clock() -> None:
    job = JobFactory.create()
    (held,) = claim(worker_id="w1", lease_ttl=timedelta(minutes=5))
    assert store.reclaim_expired_leases(10) == []
    store.renew_lease(job.pk, "w1", held.lease_epoch, -5 * SECOND)
    assert ids(store.reclaim_expired_leases(10)) == [job.pk]


def test_a_value_no_driver_reads_back_fails_no_reclaim_of_the_rows_beside_it() -> None:
    """Reclaim reads its rows as a claim does (``Engine.read``): a lapsed job
    holding a value its driver or Django cannot convert is reclaimed with the
    rest, None there and named in ``undecodable`` (its next claim fails it), and
    the jobs beside it are reclaimed as ever."""
    from django.db import connection

    from tests.stored_json import UNREADABLE

    cases = [c for c in UNREADABLE[connection.vendor] if c[0] != "run_at"]
    innocents = [expired() for _ in range(3)]
    odd = {}
    table = connection.ops.quote_name(Job._meta.db_table)
    for column, literal in cases:
        job = expired()
        with connection.cursor() as cursor:
            quoted = connection.ops.quote_name(column)
            cursor.execute(f"UPDATE {table} SET {quoted} = {literal} WHERE id = %s", [job.pk])
        odd[job.pk] = column
    reclaimed = store.reclaim_expired_leases(10)
    assert ids(reclaimed) == sorted([j.pk for j in innocents] + list(odd))
    for job in reclaimed:
        assert (job.state, job.lease_epoch, job.worker_id) == (JobState.PENDING, 2, "")
        assert job.attempts[-1]["status"] == "evicted"
        if job.pk in odd and connection.vendor != "mysql":  # MariaDB reads a zero date as None
            assert set(job.undecodable) == {odd[job.pk]}
        else:
            assert not getattr(job, "undecodable", None)
