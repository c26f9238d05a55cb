"""Claim (the seed's DequeueJobs): queues, limit, order, readiness, leases."""

from __future__ import annotations

from datetime import timedelta

import pytest

from dispatch_jobs import store
from dispatch_jobs.exceptions import LeaseWithoutWorker
from dispatch_jobs.models import Job, JobState, Quarantine
from tests.factories import JobFactory
from tests.store.support import capture, claim, db_now, ids, moment, snapshot

pytestmark = pytest.mark.django_db

TTL = timedelta(seconds=30)


def test_claim_marks_jobs_running_and_returns_them() -> None:
    job = JobFactory.create()
    claimed = claim()
    assert ids(claimed) == [job.pk]
    assert claimed[0].state == JobState.RUNNING
    row = Job.objects.get(pk=job.pk)
    assert row.state == JobState.RUNNING and row.started_at is not None


def test_empty_queue_list_claims_nothing_and_runs_no_query() -> None:
    JobFactory.create()
    with capture() as ctx:
        assert claim(queues=[]) == []
    assert ctx.captured_queries == []
    assert Job.objects.get().state == JobState.PENDING


@pytest.mark.parametrize("limit", [0, -1])
def test_non_positive_limit_claims_nothing_and_runs_no_query(limit: int) -> None:
    JobFactory.create()
    with capture() as ctx:
        assert claim(limit=limit) == []
    assert ctx.captured_queries == []
    assert Job.objects.get().state == JobState.PENDING


def test_non_positive_limit_wins_over_lease_validation() -> None:
    """Limit <= 0 is checked before validation: no LeaseWithoutWorker either."""
    assert claim(limit=0, lease_ttl=TTL) == []


def test_only_requested_queues_are_claimed() -> None:
    a = JobFactory.create(queue="a")
    b = JobFactory.create(queue="b")
    JobFactory.create(queue="c")
    assert sorted(ids(claim(queues=["a", "b"]))) == sorted([a.pk, b.pk])


def test_every_queue_claims_from_any_queue_in_claim_order() -> None:
    low = JobFactory.create(queue="a", priority=1)
    high = JobFactory.create(queue="zz-" + "q" * 90, priority=5)
    mid = JobFactory.create(queue="b", priority=3)
    assert ids(claim(queues=[], every_queue=True)) == [high.pk, mid.pk, low.pk]


def test_every_queue_ignores_the_queue_list_and_still_skips_paused_queues() -> None:
    mail = JobFactory.create(queue="mail")
    other = JobFactory.create(queue="other")
    store.pause_queue("mail")
    assert ids(claim(queues=["nowhere"], every_queue=True)) == [other.pk]
    store.resume_queue("mail")
    assert ids(claim(queues=[], every_queue=True, limit=1)) == [mail.pk]


def test_suspects_waiting_looks_in_every_queue_when_asked() -> None:
    JobFactory.create(queue="anywhere", quarantine=Quarantine.SUSPECT)
    assert not store.suspects_waiting([])
    assert not store.suspects_waiting(["elsewhere"])
    assert store.suspects_waiting([], every_queue=True)
    assert store.suspects_waiting(["anywhere"])


def test_limit_truncates() -> None:
    JobFactory.create_batch_enqueued(5)
    assert len(claim(limit=3)) == 3
    assert Job.objects.filter(state=JobState.PENDING).count() == 2


def test_order_is_priority_then_run_at_then_id() -> None:
    now = db_now()
    low = JobFactory.create(priority=0, run_at=now - timedelta(minutes=9))
    high_late = JobFactory.create(priority=5, run_at=now - timedelta(minutes=1))
    high_early = JobFactory.create(priority=5, run_at=now - timedelta(minutes=2))
    same_time = now - timedelta(minutes=3)
    mid_a = JobFactory.create(priority=2, run_at=same_time)
    mid_b = JobFactory.create(priority=2, run_at=same_time)
    assert ids(claim()) == [high_early.pk, high_late.pk, mid_a.pk, mid_b.pk, low.pk]


def test_truncation_happens_after_ordering() -> None:
    """The limit keeps the first jobs of the full order, not the first rows found."""
    JobFactory.create_batch_enqueued(5, priority=0)
    top = JobFactory.create(priority=9)
    second = JobFactory.create(priority=8)
    assert ids(claim(limit=2)) == [top.pk, second.pk]


def test_truncation_keeps_the_earliest_run_at_within_a_priority() -> None:
    now = db_now()
    JobFactory.create(run_at=now - timedelta(minutes=1))
    earliest = JobFactory.create(run_at=now - timedelta(minutes=5))
    JobFactory.create(run_at=now - timedelta(minutes=3))
    assert ids(claim(limit=1)) == [earliest.pk]


def test_retrying_jobs_are_claimable() -> None:
    job = JobFactory.create(state=JobState.RETRYING, retry_count=1)
    assert ids(claim()) == [job.pk]


@pytest.mark.parametrize(
    "state",
    [JobState.RUNNING, JobState.COMPLETED, JobState.FAILED, JobState.CANCELLED],
)
def test_jobs_not_pending_or_retrying_are_not_claimed(state: str) -> None:
    JobFactory.create(state=state)
    assert claim() == []


def test_future_run_at_is_not_claimed() -> None:
    JobFactory.create(run_at=db_now(timedelta(seconds=5)))
    assert claim() == []


def test_readiness_uses_the_database_clock() -> None:
    """run_at a few seconds either side of the DATABASE's now decides readiness."""
    due = JobFactory.create(run_at=db_now(-timedelta(seconds=3)))
    JobFactory.create(run_at=db_now(timedelta(seconds=3)))
    assert ids(claim()) == [due.pk]


def test_paused_queue_is_skipped_until_resumed() -> None:
    job = JobFactory.create(queue="mail")
    other = JobFactory.create(queue="default")
    store.pause_queue("mail")
    assert store.paused_queues() == {"mail"}
    assert ids(claim(queues=["mail", "default"])) == [other.pk]
    store.resume_queue("mail")
    assert store.paused_queues() == set()
    assert ids(claim(queues=["mail"])) == [job.pk]


def test_reserved_for_claims_only_that_job() -> None:
    JobFactory.create(priority=9)
    target = JobFactory.create()
    assert ids(claim(reserved_for=target.pk)) == [target.pk]
    assert Job.objects.filter(state=JobState.PENDING).count() == 1


def test_reserved_for_still_obeys_the_budget() -> None:
    target = JobFactory.create(resources={"memory": 100})
    assert claim(reserved_for=target.pk, budget={"memory": 99}) == []
    assert ids(claim(reserved_for=target.pk, budget={"memory": 100})) == [target.pk]


def test_reserved_for_still_obeys_queue_and_readiness() -> None:
    elsewhere = JobFactory.create(queue="other")
    later = JobFactory.create(run_at=db_now(timedelta(minutes=5)))
    running = JobFactory.create(state=JobState.RUNNING)
    for job in (elsewhere, later, running):
        assert claim(reserved_for=job.pk) == []


# -- leases -----------------------------------------------------------------------------


def test_lease_grant_sets_worker_expiry_and_bumps_epoch() -> None:
    job = JobFactory.create(lease_epoch=4)
    before = db_now()
    (claimed,) = claim(worker_id="w1", lease_ttl=TTL)
    after = db_now()
    row = Job.objects.get(pk=job.pk)
    assert row.worker_id == "w1" and claimed.worker_id == "w1"
    assert row.lease_epoch == 5 and claimed.lease_epoch == 5
    # Expiry is the database's now + ttl, measured inside the claim.
    assert before + TTL - timedelta(seconds=1) <= moment(job.pk, "lease_expires_at") <= after + TTL
    assert claimed.lease_expires_at == row.lease_expires_at


def test_lease_grant_is_part_of_the_claiming_transaction() -> None:
    """No second transaction: every write of the claim happens inside one."""
    JobFactory.create()
    with capture() as ctx:
        claim(worker_id="w1", lease_ttl=TTL)
    writes = [
        q["sql"] for q in ctx.captured_queries if q["sql"].lstrip().upper().startswith("UPDATE")
    ]
    assert len(writes) == 1
    assert "lease_epoch" in writes[0] and "lease_expires_at" in writes[0]


def test_lease_without_worker_is_refused_and_claims_nothing() -> None:
    job = JobFactory.create()
    before = snapshot(job.pk)
    with capture() as ctx, pytest.raises(LeaseWithoutWorker, match="worker_id"):
        claim(lease_ttl=TTL)
    assert ctx.captured_queries == []
    assert snapshot(job.pk) == before


def test_claim_without_lease_leaves_every_lease_column_untouched() -> None:
    expiry = db_now(timedelta(hours=1))
    beat = db_now(-timedelta(hours=1))
    job = JobFactory.create(
        worker_id="old", lease_epoch=7, lease_expires_at=expiry, heartbeat_at=beat
    )
    claim(worker_id="ignored-without-lease")
    row = Job.objects.get(pk=job.pk)
    assert row.state == JobState.RUNNING
    assert (row.worker_id, row.lease_epoch, row.lease_expires_at, row.heartbeat_at) == (
        "old",
        7,
        expiry,
        beat,
    )
