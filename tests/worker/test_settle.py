"""A written batch frees its slots at once (``Inflight.settle``), and only its
own: a job re-held under a newer lease epoch, or another job, stays held."""

from __future__ import annotations

import threading
from datetime import timedelta

from dispatch_jobs.models import Job
from dispatch_jobs.worker.inflight import Held, Inflight
from dispatch_jobs.worker.summary import Stats


def _held(job_id: int, epoch: int) -> Held:
    return Held(job=Job(id=job_id), epoch=epoch, ttl=timedelta(seconds=30))


def test_a_batch_settles_its_own_jobs_and_no_other() -> None:
    inflight = Inflight()
    a, b, c = _held(1, 1), _held(2, 1), _held(3, 7)
    for held in (a, b, c):
        inflight.add(held)
    # Job 3's outcome was written under epoch 6: its lease was taken again since.
    inflight.settle([(1, 1), (3, 6), (99, 1)])
    assert inflight.get(1) is None
    assert inflight.get(2) is b
    assert inflight.get(3) is c
    assert len(inflight) == 2


def test_settling_the_last_jobs_wakes_a_drain_waiting_for_empty() -> None:
    inflight = Inflight()
    inflight.add(_held(1, 1))
    woke = threading.Event()

    def drain() -> None:
        if inflight.wait_empty(5):
            woke.set()

    waiter = threading.Thread(target=drain)
    waiter.start()
    inflight.settle([(1, 1)])
    waiter.join(5)
    assert woke.is_set()


def test_counters_add_up_by_batch_and_one_by_one() -> None:
    stats = Stats()
    stats.add({"completed": 3, "discarded": 1})
    stats.count("completed")
    stats.count("failed")
    assert (stats.completed, stats.discarded, stats.failed, stats.retried) == (4, 1, 1, 0)
    assert stats.finished == 5
