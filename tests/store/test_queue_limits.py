"""Queue limits in the claim: fleet-wide concurrency, per-org concurrency and
rate, changed at run time, and concurrent claimers on their own connections
never overshooting (docs/how-to/limits.md)."""

from __future__ import annotations

import time
from collections import Counter
from datetime import timedelta

import pytest
from django.db import connection

from dispatch_jobs import store
from dispatch_jobs.models import Job, JobState, LimitsSource, QueueControl, QueueStart
from dispatch_jobs.queue_limits import QueueLimits
from dispatch_jobs.store import ClaimOptions
from tests.factories import JobFactory
from tests.store.concurrency import DEADLINE, run_threads
from tests.store.support import claim, db_now

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _fresh_limits():
    store.forget_limited_queues()
    yield
    store.forget_limited_queues()


def lease(**opts):
    return {"worker_id": "w1", "lease_ttl": timedelta(minutes=5), **opts}


def finish(jobs: list[Job]) -> None:
    for job in jobs:
        job.state = JobState.COMPLETED
        store.update_leased_job(job, job.worker_id, job.lease_epoch)


def test_max_running_caps_every_claim_until_a_job_finishes():
    JobFactory.create_batch_enqueued(10, queue="capped")
    store.set_queue_limits("capped", QueueLimits(max_running=3))
    first = claim(["capped"], 10, **lease())
    assert len(first) == 3
    assert claim(["capped"], 10, **lease()) == []
    finish(first[:2])
    assert len(claim(["capped"], 10, **lease())) == 2
    assert Job.objects.filter(queue="capped", state=JobState.RUNNING).count() == 3


def test_unlimited_queues_beside_a_limited_one_fill_the_rest_of_the_claim():
    JobFactory.create_batch_enqueued(5, queue="capped")
    JobFactory.create_batch_enqueued(5, queue="default")
    store.set_queue_limits("capped", QueueLimits(max_running=2))
    jobs = claim(["capped", "default"], 6, **lease())
    assert Counter(job.queue for job in jobs) == {"capped": 2, "default": 4}
    every = claim(["ignored"], 10, every_queue=True, **lease())
    assert Counter(job.queue for job in every) == {"default": 1}


def test_a_paused_limited_queue_gives_nothing():
    JobFactory.create_batch_enqueued(3, queue="capped")
    store.set_queue_limits("capped", QueueLimits(max_running=2))
    store.pause_queue("capped")
    assert claim(["capped"], 10, **lease()) == []
    store.resume_queue("capped")
    assert len(claim(["capped"], 10, **lease())) == 2


def test_limits_changed_at_run_time_hold_at_the_next_claim():
    JobFactory.create_batch_enqueued(20, queue="capped")
    store.set_queue_limits("capped", QueueLimits(max_running=3))
    assert len(claim(["capped"], 10, **lease())) == 3
    store.set_queue_limits("capped", QueueLimits(max_running=5))
    assert len(claim(["capped"], 10, **lease())) == 2
    store.set_queue_limits("capped", QueueLimits(max_running=1))
    assert claim(["capped"], 10, **lease()) == []
    store.set_queue_limits("capped", QueueLimits())
    assert len(claim(["capped"], 10, **lease())) == 10


def test_a_limit_set_by_another_process_holds_before_this_one_rereads_its_list():
    """The list of limited queues is cached per process, but the unlimited claim's
    statement reads the control table itself: a new limit keeps it out at once."""
    JobFactory.create_batch_enqueued(5, queue="capped")
    assert store.limited_queues() == frozenset()  # cached: no limited queue
    QueueControl.objects.create(name="capped", max_running=2)  # another process's write
    assert claim(["capped"], 10, **lease()) == []  # skipped, never over the limit
    store.forget_limited_queues()  # what the next refresh (within a second) does
    assert len(claim(["capped"], 10, **lease())) == 2


def test_a_stale_list_naming_a_queue_no_longer_limited_still_claims_it():
    JobFactory.create_batch_enqueued(5, queue="capped")
    store.set_queue_limits("capped", QueueLimits(max_running=1))
    assert store.limited_queues() == frozenset({"capped"})
    QueueControl.objects.filter(name="capped").update(max_running=None)  # elsewhere
    assert len(claim(["capped"], 10, **lease())) == 5


def test_per_org_limit_lets_no_tenant_take_more_than_its_share():
    for org, count in (("acme", 6), ("globex", 6), ("", 3)):
        JobFactory.create_batch_enqueued(count, queue="shared", scope_org_id=org)
    store.set_queue_limits("shared", QueueLimits(max_running_per_org=2))
    jobs = claim(["shared"], 20, **lease())
    assert Counter(job.scope_org_id for job in jobs) == {"acme": 2, "globex": 2, "": 2}
    assert claim(["shared"], 20, **lease()) == []
    finish([job for job in jobs if job.scope_org_id == "acme"][:1])
    again = claim(["shared"], 20, **lease())
    assert [job.scope_org_id for job in again] == ["acme"]


def test_per_org_and_queue_limits_together():
    for org in ("a", "b", "c"):
        JobFactory.create_batch_enqueued(4, queue="shared", scope_org_id=org)
    store.set_queue_limits("shared", QueueLimits(max_running=5, max_running_per_org=2))
    jobs = claim(["shared"], 20, **lease())
    orgs = Counter(job.scope_org_id for job in jobs)
    assert len(jobs) == 5 and max(orgs.values()) == 2


def test_rate_limit_counts_starts_in_a_sliding_window():
    JobFactory.create_batch_enqueued(12, queue="metered")
    store.set_queue_limits("metered", QueueLimits(rate_limit=5, rate_period=timedelta(minutes=1)))
    first = claim(["metered"], 10, **lease())
    assert len(first) == 5
    finish(first)  # finishing frees no rate: the starts stay in the window
    assert claim(["metered"], 10, **lease()) == []
    assert QueueStart.objects.filter(queue="metered").count() == 5
    # Two of the starts leave the window (as a minute passing would make them).
    oldest = QueueStart.objects.filter(queue="metered").order_by("id")[:2]
    QueueStart.objects.filter(pk__in=[s.pk for s in oldest]).update(
        started_at=db_now(-timedelta(minutes=2))
    )
    assert len(claim(["metered"], 10, **lease())) == 2
    # The claim dropped the starts older than the window: it never outgrows the rate.
    assert QueueStart.objects.filter(queue="metered").count() == 5


def test_dropping_a_rate_limit_drops_its_window():
    JobFactory.create_batch_enqueued(3, queue="metered")
    store.set_queue_limits("metered", QueueLimits(rate_limit=2, rate_period=timedelta(hours=1)))
    assert len(claim(["metered"], 10, **lease())) == 2
    store.set_queue_limits("metered", QueueLimits(max_running=10))
    assert not QueueStart.objects.exists()
    assert len(claim(["metered"], 10, **lease())) == 1


def test_settings_sync_leaves_the_admins_limits_alone():
    store.set_queue_limits("admin-set", QueueLimits(max_running=9))
    declared = {
        "admin-set": QueueLimits(max_running=1),
        "emails": QueueLimits(max_running=5, rate_limit=100, rate_period=timedelta(minutes=1)),
    }
    assert store.sync_queue_limits(declared) == ["emails"]
    assert store.queue_limits("admin-set") == (QueueLimits(max_running=9), LimitsSource.ADMIN)
    assert store.queue_limits("emails") == (declared["emails"], LimitsSource.SETTINGS)
    assert store.sync_queue_limits(declared) == []  # nothing changed: nothing written
    # Removed from the settings: the settings' limits go; the admin's stay.
    assert store.sync_queue_limits({}) == ["emails"]
    assert store.queue_limits("emails") == (QueueLimits(), LimitsSource.NONE)
    assert store.queue_limits("admin-set")[0] == QueueLimits(max_running=9)
    # Handed back to the settings from the admin.
    assert store.revert_queue_limits("admin-set", declared) == QueueLimits(max_running=1)
    assert store.queue_limits("admin-set") == (QueueLimits(max_running=1), LimitsSource.SETTINGS)


# --- Concurrent claimers, each on its own connection.


def _claim_until_refused(worker: str, queue: str) -> list[int]:
    """Claim (3 at a time, never finishing) until the limit refuses twice running."""
    claimed: list[int] = []
    refused = 0
    deadline = time.monotonic() + DEADLINE
    try:
        while refused < 2 and time.monotonic() < deadline:
            jobs = store.claim_jobs(
                ClaimOptions(
                    queues=[queue],
                    limit=3,
                    worker_id=worker,
                    lease_ttl=timedelta(minutes=5),
                )
            )
            claimed += [job.pk for job in jobs]
            refused = 0 if jobs else refused + 1
        return claimed
    finally:
        connection.close()


@pytest.mark.parametrize(
    ("limits", "expected"),
    [
        (QueueLimits(max_running=7), 7),
        (QueueLimits(rate_limit=11, rate_period=timedelta(hours=1)), 11),
        (QueueLimits(max_running=50, max_running_per_org=3), 3 * 4),
    ],
    ids=["max_running", "rate", "per_org"],
)
def test_concurrent_claimers_never_overshoot(limits, expected):
    for org in ("a", "b", "c", "d"):
        JobFactory.create_batch_enqueued(25, queue="raced", scope_org_id=org)
    store.set_queue_limits("raced", limits)
    per_thread = run_threads(lambda i: _claim_until_refused(f"t{i}", "raced"))
    claimed = [job_id for found in per_thread for job_id in found]
    assert len(claimed) == len(set(claimed)) == expected
    running = Job.objects.filter(queue="raced", state=JobState.RUNNING)
    assert running.count() == expected
    if limits.max_running_per_org:
        assert set(Counter(running.values_list("scope_org_id", flat=True)).values()) == {3}


def _claim_and_finish(worker: str, queue: str) -> tuple[list[int], int]:
    """Claim two at a time and finish them, until the queue is drained; the ids
    and the most jobs of the queue seen running just after a claim."""
    claimed: list[int] = []
    peak = 0
    deadline = time.monotonic() + DEADLINE
    jobs_of_queue = Job.objects.filter(queue=queue)
    try:
        while time.monotonic() < deadline:
            jobs = store.claim_jobs(
                ClaimOptions(
                    queues=[queue], limit=2, worker_id=worker, lease_ttl=timedelta(minutes=5)
                )
            )
            if jobs:
                peak = max(peak, jobs_of_queue.filter(state=JobState.RUNNING).count())
                claimed += [job.pk for job in jobs]
                finish(jobs)
            elif not jobs_of_queue.filter(state=JobState.PENDING).exists():
                break
        return claimed, peak
    finally:
        connection.close()


def test_concurrent_claimers_draining_a_capped_queue_stay_under_the_cap():
    made = {job.pk for job in JobFactory.create_batch_enqueued(120, queue="capped")}
    store.set_queue_limits("capped", QueueLimits(max_running=3))
    results = run_threads(lambda i: _claim_and_finish(f"t{i}", "capped"))
    claimed = [job_id for found, _ in results for job_id in found]
    assert sorted(claimed) == sorted(made)  # each once, none lost
    assert max(peak for _, peak in results) <= 3
