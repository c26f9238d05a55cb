"""The claim's rung filter: a job needs at least its execution rung, and a worker
claims only the jobs whose rung it provides (``rungs.provided_by``)."""

from __future__ import annotations

import pytest

from dispatch_jobs import rungs, store
from dispatch_jobs.models import Job, JobState
from tests.factories import JobFactory
from tests.store.support import claim, ids

pytestmark = pytest.mark.django_db


def test_an_in_process_worker_leaves_subprocess_jobs() -> None:
    plain = JobFactory.create(execution="in-process")
    isolated = JobFactory.create(execution="subprocess")
    assert ids(claim(executions=rungs.provided_by(rungs.IN_PROCESS))) == [plain.pk]
    assert Job.objects.get(pk=isolated.pk).state == JobState.PENDING


def test_a_subprocess_worker_claims_both_rungs() -> None:
    plain = JobFactory.create(execution="in-process")
    isolated = JobFactory.create(execution="subprocess")
    claimed = claim(executions=rungs.provided_by(rungs.SUBPROCESS))
    assert sorted(ids(claimed)) == sorted([plain.pk, isolated.pk])


def test_a_job_of_a_rung_nobody_provides_is_never_claimed_by_a_worker() -> None:
    JobFactory.create(execution="container")
    assert claim(executions=rungs.provided_by(rungs.SUBPROCESS)) == []
    # A caller that names no rungs (the plain store API) claims any.
    assert len(claim()) == 1


def test_a_blank_rung_reads_as_in_process() -> None:
    legacy = JobFactory.create(execution="")
    assert ids(claim(executions=rungs.provided_by(rungs.IN_PROCESS))) == [legacy.pk]


def test_the_filter_does_not_consume_the_limit() -> None:
    """Jobs of a rung not provided are skipped, not counted: the limit fills with
    the ones this worker can run behind them."""
    for _ in range(3):
        JobFactory.create(execution="subprocess", priority=10)
    wanted = [JobFactory.create(execution="in-process") for _ in range(2)]
    claimed = claim(limit=2, executions=rungs.provided_by(rungs.IN_PROCESS))
    assert sorted(ids(claimed)) == sorted(j.pk for j in wanted)


def test_suspects_waiting_respects_the_rung() -> None:
    JobFactory.create(execution="subprocess", quarantine=1)
    assert store.suspects_waiting(["default"], executions=rungs.provided_by(rungs.SUBPROCESS))
    assert not store.suspects_waiting(["default"], executions=rungs.provided_by(rungs.IN_PROCESS))


def test_provided_by_orders_the_rungs() -> None:
    assert set(rungs.provided_by(rungs.IN_PROCESS)) == {"in-process", ""}
    assert set(rungs.provided_by(rungs.SUBPROCESS)) == {"in-process", "subprocess", ""}


def test_skipped_ids_are_never_claimed() -> None:
    skipped = JobFactory.create(priority=10)
    other = JobFactory.create()
    assert ids(claim(skip=[skipped.pk])) == [other.pk]
    assert Job.objects.get(pk=skipped.pk).state == JobState.PENDING
