"""The claim's fit test: budget, custom keys, the unbounded rule, locality."""

from __future__ import annotations

from datetime import timedelta

import pytest

from dispatch_jobs import store
from dispatch_jobs.exceptions import InvalidJob, InvalidResources
from dispatch_jobs.models import Job, JobState
from tests.factories import JobFactory
from tests.store.support import claim, db_now, ids, snapshot

pytestmark = pytest.mark.django_db

GIB = 2**30


# -- budget -------------------------------------------------------------------------------


def test_absent_budget_key_is_unconstrained() -> None:
    """A worker that declares only memory still claims GPU jobs."""
    gpu_job = JobFactory.create(resources={"gpu": 4000, "memory": GIB})
    assert ids(claim(budget={"memory": GIB})) == [gpu_job.pk]


def test_present_zero_budget_is_a_real_limit() -> None:
    needs_memory = JobFactory.create(resources={"memory": 1})
    needs_nothing = JobFactory.create()
    assert ids(claim(budget={"memory": 0})) == [needs_nothing.pk]
    assert Job.objects.get(pk=needs_memory.pk).state == JobState.PENDING


def test_budget_boundary_is_inclusive() -> None:
    exact = JobFactory.create(resources={"cpu": 2000, "memory": GIB})
    JobFactory.create(resources={"cpu": 2001})
    JobFactory.create(resources={"memory": GIB + 1})
    assert ids(claim(budget={"cpu": 2000, "memory": GIB})) == [exact.pk]


@pytest.mark.parametrize("key", ["cpu", "memory", "disk", "gpu"])
def test_every_standard_dimension_is_compared(key: str) -> None:
    fits = JobFactory.create(resources={key: 10})
    JobFactory.create(resources={key: 11})
    assert ids(claim(budget={key: 10})) == [fits.pk]


def test_custom_keys_in_the_budget_are_ignored_by_the_predicate() -> None:
    """fpga: 0 in the budget does not exclude a job needing 5 fpga offered by key."""
    job = JobFactory.create(resources={"fpga": 5, "memory": 10})
    assert ids(claim(budget={"memory": 10, "fpga": 0}, custom_keys=["fpga"])) == [job.pk]


def test_oversized_job_at_the_head_does_not_consume_a_slot() -> None:
    """Limit counts eligible jobs only: the fit test is inside the query."""
    big = JobFactory.create(priority=9, resources={"memory": 10 * GIB})
    small = [JobFactory.create(priority=1, resources={"memory": GIB}) for _ in range(2)]
    assert ids(claim(limit=2, budget={"memory": 2 * GIB})) == ids(small)
    assert Job.objects.get(pk=big.pk).state == JobState.PENDING


# -- custom keys ----------------------------------------------------------------------------


def test_custom_key_never_matches_a_longer_key() -> None:
    """fpga offered does not satisfy fpga-large (the delimiters), nor the reverse."""
    large = JobFactory.create(resources={"fpga-large": 1})
    plain = JobFactory.create(resources={"fpga": 1})
    assert ids(claim(budget={"memory": GIB}, custom_keys=["fpga"])) == [plain.pk]
    assert ids(claim(budget={"memory": GIB}, custom_keys=["fpga-large"])) == [large.pk]


def test_custom_keys_are_subset_containment() -> None:
    """{fpga, tpu} is claimed by an offer {fpga, nvme, tpu} that interleaves a key."""
    job = JobFactory.create(resources={"fpga": 1, "tpu": 1})
    assert ids(claim(custom_keys=["tpu", "nvme", "fpga"])) == [job.pk]


def test_job_needing_more_custom_keys_than_offered_is_not_claimed() -> None:
    JobFactory.create(resources={"fpga": 1, "tpu": 1})
    assert claim(custom_keys=["fpga"]) == []


def test_offered_custom_keys_still_claim_jobs_without_custom_keys() -> None:
    plain = JobFactory.create()
    assert ids(claim(custom_keys=["fpga"])) == [plain.pk]


def test_unbounded_claim_takes_custom_key_jobs() -> None:
    """No budget and no custom keys: the caller does not use the resource model."""
    job = JobFactory.create(resources={"fpga": 1})
    assert ids(claim()) == [job.pk]


def test_bounded_claim_with_no_custom_keys_refuses_custom_key_jobs() -> None:
    custom = JobFactory.create(resources={"fpga": 1})
    plain = JobFactory.create(resources={"memory": 1})
    assert ids(claim(budget={"memory": GIB})) == [plain.pk]
    assert Job.objects.get(pk=custom.pk).state == JobState.PENDING


# -- prefer hashes (locality) ----------------------------------------------------------------


def test_preferred_jobs_sort_first_within_a_priority_band() -> None:
    now = db_now()
    older = JobFactory.create(run_at=now - timedelta(minutes=5))
    staged = JobFactory.create(primary_input_hash="h1", run_at=now - timedelta(minutes=1))
    assert ids(claim(prefer_hashes=["h1"])) == [staged.pk, older.pk]


def test_preferred_job_wins_the_last_slot_within_its_band() -> None:
    """Truncation happens after the locality order, inside the query."""
    now = db_now()
    JobFactory.create(run_at=now - timedelta(minutes=5))
    staged = JobFactory.create(primary_input_hash="h1", run_at=now - timedelta(minutes=1))
    assert ids(claim(limit=1, prefer_hashes=["h0", "h1"])) == [staged.pk]


def test_preference_never_outranks_priority() -> None:
    staged = JobFactory.create(primary_input_hash="h1", priority=0)
    urgent = JobFactory.create(priority=1)
    assert ids(claim(prefer_hashes=["h1"])) == [urgent.pk, staged.pk]
    JobFactory.create(primary_input_hash="h1", priority=0)
    second_urgent = JobFactory.create(priority=1)
    assert ids(claim(limit=1, prefer_hashes=["h1"])) == [second_urgent.pk]


def test_preference_never_filters() -> None:
    a = JobFactory.create(primary_input_hash="other")
    b = JobFactory.create()
    assert sorted(ids(claim(prefer_hashes=["h1"]))) == sorted([a.pk, b.pk])


def test_empty_prefer_hash_is_not_a_locality_signal() -> None:
    """ "" must not prefer every job with no hash over an older job with one."""
    older = JobFactory.create(primary_input_hash="x", run_at=db_now() - timedelta(minutes=5))
    unhashed = JobFactory.create(run_at=db_now() - timedelta(minutes=1))
    assert ids(claim(prefer_hashes=[""])) == [older.pk, unhashed.pk]


def test_prefer_hashes_alone_is_still_unbounded() -> None:
    """Only prefer_hashes: custom-key jobs are still claimed (it is no resource term)."""
    custom = JobFactory.create(resources={"fpga": 1})
    assert ids(claim(prefer_hashes=["h1"])) == [custom.pk]


# -- a requirement changed after enqueue --------------------------------------------------

BIG_FPGA = {"memory": 64 * GIB, "fpga": 1}


def test_update_job_recomputes_what_the_claim_compares() -> None:
    job = JobFactory.create(resources={"memory": GIB})
    job.resources = dict(BIG_FPGA)
    store.update_job(job)
    assert claim(budget={"memory": 4 * GIB}) == []
    row = Job.objects.get(pk=job.pk)
    assert (row.memory, row.custom_keys, row.state) == (64 * GIB, ",fpga,", JobState.PENDING)
    assert ids(claim(budget={"memory": 64 * GIB}, custom_keys=["fpga"])) == [job.pk]


def test_update_leased_job_recomputes_what_the_claim_compares() -> None:
    """A worker hands a job back for a retry with a bigger requirement: the next
    claim compares the new one."""
    JobFactory.create(resources={"memory": GIB})
    (job,) = claim(budget={"memory": 4 * GIB}, worker_id="w1", lease_ttl=timedelta(minutes=1))
    job.state = JobState.RETRYING
    job.run_at = db_now(-timedelta(seconds=1))
    job.resources = dict(BIG_FPGA)
    store.update_leased_job(job, "w1", job.lease_epoch)
    assert claim(budget={"memory": 4 * GIB}) == []
    assert ids(claim(budget={"memory": 64 * GIB}, custom_keys=["fpga"])) == [job.pk]


def test_update_clearing_resources_clears_the_columns() -> None:
    job = JobFactory.create(resources=dict(BIG_FPGA))
    job.resources = {}
    store.update_job(job)
    assert ids(claim(budget={"memory": 0})) == [job.pk]


@pytest.mark.parametrize("resources", [{"memory": "2Gi"}, {"memory": -1}, "2Gi", {"FPGA!": 1}])
def test_update_with_unreadable_resources_is_refused_unwritten(resources: object) -> None:
    job = JobFactory.create(resources={"memory": GIB})
    before = snapshot(job.pk)
    job.resources = resources
    with pytest.raises((InvalidJob, InvalidResources)):
        store.update_job(job)
    with pytest.raises((InvalidJob, InvalidResources)):
        store.update_leased_job(job, "w1", job.lease_epoch)
    assert snapshot(job.pk) == before
