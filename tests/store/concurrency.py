"""The loops the concurrency tests run in threads and in child processes."""

from __future__ import annotations

import time
from datetime import timedelta

from django.db import connection

from dispatch_jobs import store
from dispatch_jobs.models import Job, JobState
from dispatch_jobs.store import ClaimOptions


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
