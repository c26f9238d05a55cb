"""The worker registry and named leadership leases."""

from __future__ import annotations

from datetime import timedelta

import pytest

from dispatch_jobs import store
from dispatch_jobs.models import Leadership, Worker, WorkerState
from tests.factories import WorkerFactory
from tests.store.support import db_now

pytestmark = pytest.mark.django_db

MINUTE = timedelta(minutes=1)


def test_register_worker_creates_then_updates_the_row() -> None:
    store.register_worker("w1", hostname="h", pid=1, queues=["a"], concurrency=2)
    store.set_worker_state("w1", WorkerState.DRAINING)
    store.register_worker(
        "w1", hostname="h", pid=2, queues=["a", "b"], concurrency=4, capacity={"memory": 8}
    )
    row = Worker.objects.get(pk="w1")
    assert (row.pid, row.queues, row.concurrency, row.capacity) == (2, ["a", "b"], 4, {"memory": 8})
    assert row.state == WorkerState.ACTIVE
    assert Worker.objects.count() == 1


def test_touch_worker_reports_a_missing_row() -> None:
    worker = WorkerFactory.create(last_seen_at=db_now(-timedelta(hours=1)))
    assert store.touch_worker(worker.pk) is True
    assert Worker.objects.get(pk=worker.pk).last_seen_at > db_now(-MINUTE)
    assert store.touch_worker("gone") is False


def test_touch_worker_records_failing_claims_by_the_database_clock_then_clears_them() -> None:
    worker = WorkerFactory.create()
    assert store.touch_worker(
        worker.pk, claim_error="OperationalError: lock timeout", failing_for=timedelta(minutes=5)
    )
    row = Worker.objects.get(pk=worker.pk)
    assert row.claim_error == "OperationalError: lock timeout"
    assert db_now(-timedelta(minutes=6)) < row.claim_error_since < db_now(-timedelta(minutes=4))
    assert store.touch_worker(worker.pk)  # a claim succeeded since
    row = Worker.objects.get(pk=worker.pk)
    assert (row.claim_error, row.claim_error_since) == (None, None)


def test_a_claim_error_is_stored_whatever_its_text() -> None:
    """A driver's message may hold what a column cannot store: reporting it must
    never be what fails."""
    worker = WorkerFactory.create()
    text = "bad \x00 byte, lone \udc80 surrogate, " + "x" * 5000
    assert store.touch_worker(worker.pk, claim_error=text, failing_for=timedelta(0))
    stored = Worker.objects.get(pk=worker.pk).claim_error
    assert stored is not None and stored.startswith("bad  byte, lone ? surrogate, xxx")
    assert len(stored) == store.workers.CLAIM_ERROR_MAX


def test_set_worker_state_draining() -> None:
    worker = WorkerFactory.create()
    store.set_worker_state(worker.pk, WorkerState.DRAINING)
    assert Worker.objects.get(pk=worker.pk).state == WorkerState.DRAINING


def test_deregister_worker_removes_it() -> None:
    worker = WorkerFactory.create()
    store.deregister_worker(worker.pk)
    assert not Worker.objects.filter(pk=worker.pk).exists()


def test_live_and_stale_workers_by_the_database_clock() -> None:
    live = WorkerFactory.create(last_seen_at=db_now(-timedelta(seconds=5)))
    stale = WorkerFactory.create(last_seen_at=db_now(-timedelta(minutes=5)))
    assert [w.pk for w in store.live_workers(MINUTE)] == [live.pk]
    assert store.remove_stale_workers(MINUTE) == 1
    assert not Worker.objects.filter(pk=stale.pk).exists()


# -- leadership ---------------------------------------------------------------------------


def test_first_acquirer_becomes_leader() -> None:
    assert store.acquire_leadership("maintenance", "a", MINUTE) is True
    assert store.leader_of("maintenance") == "a"


def test_contention_between_two_holders() -> None:
    assert store.acquire_leadership("maintenance", "a", MINUTE)
    assert store.acquire_leadership("maintenance", "b", MINUTE) is False
    assert store.acquire_leadership("maintenance", "a", MINUTE) is True  # renewal
    assert store.leader_of("maintenance") == "a"


def test_renewal_extends_expiry_from_the_database_clock() -> None:
    store.acquire_leadership("maintenance", "a", MINUTE)
    store.acquire_leadership("maintenance", "a", timedelta(hours=1))
    assert Leadership.objects.get(pk="maintenance").expires_at > db_now(timedelta(minutes=59))


def test_expired_leadership_is_taken_over() -> None:
    store.acquire_leadership("maintenance", "a", MINUTE)
    Leadership.objects.filter(pk="maintenance").update(expires_at=db_now(-timedelta(seconds=2)))
    assert store.leader_of("maintenance") == ""
    assert store.acquire_leadership("maintenance", "b", MINUTE) is True
    assert store.leader_of("maintenance") == "b"
    assert store.acquire_leadership("maintenance", "a", MINUTE) is False


def test_release_leadership_frees_it_only_for_its_holder() -> None:
    store.acquire_leadership("maintenance", "a", MINUTE)
    store.release_leadership("maintenance", "b")
    assert store.leader_of("maintenance") == "a"
    store.release_leadership("maintenance", "a")
    assert store.leader_of("maintenance") == ""
    assert store.acquire_leadership("maintenance", "b", MINUTE) is True


def test_leaderships_are_independent_by_name() -> None:
    assert store.acquire_leadership("maintenance", "a", MINUTE)
    assert store.acquire_leadership("schedules", "b", MINUTE)
