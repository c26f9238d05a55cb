"""The loops the concurrency tests run in threads and in child processes."""

from __future__ import annotations

import multiprocessing
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

from django.db import connection

from dispatch_jobs import store
from dispatch_jobs.models import Job, JobState
from dispatch_jobs.store import ClaimOptions

WORKERS = 4
DEADLINE = 90.0


def claim_loop(worker_id: str, limit: int, deadline: float, *, complete: bool = False) -> list[int]:
    """Claim (granting leases) until no pending job is left; the claimed ids.

    With ``complete``, each claimed job is then finished through the fenced write,
    as a worker does, so claims contend with completions for the write lock too.

    An empty claim is not the end by itself: on PostgreSQL and MariaDB a row
    locked by another claimer is skipped, so stop only once none is pending.
    """
    claimed: list[int] = []
    try:
        while time.monotonic() < deadline:
            jobs = store.claim_jobs(
                ClaimOptions(
                    queues=["default"],
                    limit=limit,
                    worker_id=worker_id,
                    lease_ttl=timedelta(minutes=5),
                )
            )
            claimed += [job.pk for job in jobs]
            for job in jobs if complete else ():
                job.state = JobState.COMPLETED
                store.update_leased_job(job, worker_id, job.lease_epoch)
            if not jobs and not Job.objects.filter(state=JobState.PENDING).exists():
                break
        return claimed
    finally:
        connection.close()


def reclaim_loop(limit: int, deadline: float) -> list[tuple[int, int]]:
    """Reclaim until no running job is left; (id, new epoch) of every reclaim."""
    reclaimed: list[tuple[int, int]] = []
    try:
        while time.monotonic() < deadline:
            jobs = store.reclaim_expired_leases(limit)
            reclaimed += [(job.pk, job.lease_epoch) for job in jobs]
            if not jobs and not Job.objects.filter(state=JobState.RUNNING).exists():
                break
        return reclaimed
    finally:
        connection.close()


def run_processes(
    entry: Callable[..., None], limit: int, workers: int = WORKERS, deadline: float = DEADLINE
) -> list[Any]:
    """Run ``entry`` in ``workers`` spawned processes on the test database, released
    together once every child has set Django up; each child's results."""
    ctx = multiprocessing.get_context("spawn")
    ready, results, go = ctx.Queue(), ctx.Queue(), ctx.Event()
    db_name = connection.settings_dict["NAME"]
    procs = [
        ctx.Process(target=entry, args=(db_name, f"proc-{i}", limit, ready, go, results))
        for i in range(workers)
    ]
    for proc in procs:
        proc.start()
    try:
        for _ in procs:
            ready.get(timeout=deadline)
        go.set()
        outcomes = [results.get(timeout=deadline) for _ in procs]
    finally:
        for proc in procs:
            proc.join(timeout=deadline)
            if proc.is_alive():
                proc.kill()
    errors = [error for _, _, errs in outcomes for error in errs]
    assert errors == [], "\n".join(errors)
    return [found for _, found, _ in outcomes]


def run_threads(target: Callable[[int], Any]) -> list[Any]:
    """Run ``target(i)`` in WORKERS threads released together; each thread opens
    its own database connection (and closes it in the loop's ``finally``)."""
    barrier = threading.Barrier(WORKERS)

    def start(i: int) -> Any:
        barrier.wait(DEADLINE)
        return target(i)

    with ThreadPoolExecutor(WORKERS) as pool:
        return list(pool.map(start, range(WORKERS)))
