"""Seed data for the admin tests, written only through the store: enqueue, then
claim with a lease and finish with the fenced write, as a worker would."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from typing import Any

from dispatch_jobs import store
from dispatch_jobs.models import Job, JobState
from dispatch_jobs.store import ClaimOptions

WORKER = "w-admin-tests"
_queues = itertools.count()


def enqueue(count: int = 1, **fields: Any) -> list[Job]:
    """``count`` pending jobs in one INSERT; ``fields`` apply to each."""
    fields.setdefault("name", "tests.jobs.tasks.noop")
    fields.setdefault("queue", "default")
    fields.setdefault("payload", {"args": [], "kwargs": {}})
    return store.enqueue_jobs([Job(**fields) for _ in range(count)])


def claim(jobs: list[Job], worker_id: str = WORKER) -> list[Job]:
    """Claim exactly ``jobs`` (by reservation) under a lease held by ``worker_id``."""
    claimed = []
    for job in jobs:
        opts = ClaimOptions(
            queues=[job.queue],
            limit=1,
            reserved_for=job.pk,
            worker_id=worker_id,
            lease_ttl=timedelta(minutes=5),
        )
        got = store.claim_jobs(opts)
        assert [j.pk for j in got] == [job.pk], f"could not claim job {job.pk}"
        claimed += got
    return claimed


def finish(
    jobs: list[Job],
    state: str,
    *,
    error: str = "ValueError: boom",
    return_value: Any = None,
    worker_id: str = WORKER,
) -> list[Job]:
    """Claim ``jobs`` and write a terminal outcome through the lease fence."""
    done = []
    for job in claim(jobs, worker_id):
        now = datetime.now(UTC)
        job.state = state
        job.completed_at = now
        if state == JobState.FAILED:
            job.last_error = error
            job.attempts = [
                {
                    "attempt": 1,
                    "worker_id": worker_id,
                    "status": "failed",
                    "exception_class": "builtins." + error.split(":", 1)[0],
                    "message": error.split(":", 1)[-1].strip(),
                    "traceback": f"Traceback (most recent call last):\n  ...\n{error}\n",
                    "started_at": now.isoformat(),
                    "finished_at": now.isoformat(),
                }
            ]
        else:
            job.return_value = return_value
        store.update_leased_job(job, worker_id, job.lease_epoch)
        done.append(Job.objects.get(pk=job.pk))
    return done


def failed(count: int = 1, **fields: Any) -> list[Job]:
    error = fields.pop("error", "ValueError: boom")
    return finish(enqueue(count, **fields), JobState.FAILED, error=error)


def completed(count: int = 1, **fields: Any) -> list[Job]:
    return_value = fields.pop("return_value", None)
    return finish(enqueue(count, **fields), JobState.COMPLETED, return_value=return_value)


def cancelled(count: int = 1, **fields: Any) -> list[Job]:
    jobs = enqueue(count, **fields)
    store.cancel_jobs([job.pk for job in jobs])
    return [Job.objects.get(pk=job.pk) for job in jobs]


def running(count: int = 1, **fields: Any) -> list[Job]:
    return [Job.objects.get(pk=j.pk) for j in claim(enqueue(count, **fields))]
