"""Exclusivity under real concurrency: several connections, threads and processes.

Every job is claimed exactly once (none twice, none lost), and concurrent
reclaimers take each expired job exactly once (its epoch bumped once). On SQLite
the process tests prove the IMMEDIATE transactions, WAL and busy timeout: no
"database is locked" reaches a caller.
"""

from __future__ import annotations

import time
from collections import Counter
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection

from dispatch_jobs import store
from dispatch_jobs.models import Job, JobState
from tests.factories import JobFactory
from tests.store import _procs
from tests.store.concurrency import claim_loop, reclaim_loop, run_processes, run_threads
from tests.store.support import db_now

pytestmark = pytest.mark.django_db(transaction=True)

JOBS = 500
EXPIRED = 200
WORKERS = 4
DEADLINE = 90.0


def make_expired_leases(count: int) -> set[int]:
    jobs = JobFactory.create_batch_enqueued(count)
    Job.objects.update(
        state=JobState.RUNNING,
        worker_id="dead",
        lease_epoch=1,
        lease_expires_at=db_now(-timedelta(seconds=5)),
    )
    return {job.pk for job in jobs}


def assert_claimed_exactly_once(
    per_worker: list[list[int]], expected: set[int], state: str = JobState.RUNNING
) -> None:
    counts = Counter(job_id for found in per_worker for job_id in found)
    assert [job_id for job_id, n in counts.items() if n > 1] == []  # none twice
    assert set(counts) == expected  # none lost
    rows = Job.objects.filter(pk__in=expected)
    assert rows.filter(state=state, lease_epoch=1).count() == len(expected)


def assert_reclaimed_exactly_once(per_worker: list[list[Any]], expected: set[int]) -> None:
    counts = Counter(job_id for found in per_worker for job_id, _ in found)
    assert [job_id for job_id, n in counts.items() if n > 1] == []
    assert set(counts) == expected
    assert {epoch for found in per_worker for _, epoch in found} == {2}
    rows = Job.objects.filter(pk__in=expected, state=JobState.PENDING)
    assert rows.filter(lease_epoch=2, evict_count=1, retry_count=0).count() == len(expected)


def test_threads_claim_every_job_exactly_once() -> None:
    expected = {job.pk for job in JobFactory.create_batch_enqueued(JOBS)}
    deadline = time.monotonic() + DEADLINE
    per_worker = run_threads(lambda i: claim_loop(f"thread-{i}", 3 + i, deadline))
    assert_claimed_exactly_once(per_worker, expected)


def test_processes_claim_every_job_exactly_once() -> None:
    """Each process claims and completes (two write transactions per batch); on
    SQLite no "database is locked" may reach a caller (the child reports any error)."""
    expected = {job.pk for job in JobFactory.create_batch_enqueued(JOBS)}
    per_worker = run_processes(_procs.claim_until_empty, limit=5)
    assert_claimed_exactly_once(per_worker, expected, state=JobState.COMPLETED)


def test_threads_reclaim_each_expired_job_exactly_once() -> None:
    expected = make_expired_leases(EXPIRED)
    deadline = time.monotonic() + DEADLINE
    per_worker = run_threads(lambda i: reclaim_loop(7, deadline))
    assert_reclaimed_exactly_once(per_worker, expected)


def test_processes_reclaim_each_expired_job_exactly_once() -> None:
    expected = make_expired_leases(EXPIRED)
    per_worker = run_processes(_procs.reclaim_until_empty, limit=7)
    assert_reclaimed_exactly_once(per_worker, expected)


def test_leadership_race_has_exactly_one_winner_per_name() -> None:
    names = [f"duty-{n}" for n in range(20)]

    def contend(i: int) -> list[str]:
        try:
            won = []
            for name in names:
                if store.acquire_leadership(name, f"holder-{i}", timedelta(minutes=1)):
                    won.append(name)
            return won
        finally:
            connection.close()

    winners = Counter(name for won in run_threads(contend) for name in won)
    assert winners == Counter(dict.fromkeys(names, 1))
