"""The workers view: every registered worker, whether it is still heard from,
whether its claims succeed, and the jobs it holds right now."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from .. import database
from ..conf import settings
from ..models import Job, JobState, Worker
from ..store import reads
from .readonly import OverviewAdmin

# Three missed heartbeats and a worker is flagged as stale (it may have died;
# reclaim will hand its jobs back when their leases expire).
STALE_AFTER_BEATS = 3


@dataclass
class WorkerRow:
    worker: Worker
    silent_for: timedelta
    stale: bool
    held: list[Job]
    # The claim error of a worker whose claims have failed for longer than one
    # heartbeat ("" when healthy): alive, heard from, and running nothing.
    unhealthy: str = ""


def claim_trouble(worker: Worker, now: datetime) -> str:
    """The worker's claim error once its claims have failed for over a heartbeat."""
    since = worker.claim_error_since
    if not worker.claim_error or since is None:
        return ""
    return worker.claim_error if now - since > settings.heartbeat_interval else ""


def worker_rows() -> list[WorkerRow]:
    """Workers with their held jobs: two queries, the second bounded by the
    workers' concurrency (running jobs only, through the worker index)."""
    now = database.database_now()
    stale_after = settings.heartbeat_interval * STALE_AFTER_BEATS
    workers = list(reads.workers().order_by("hostname", "id"))
    held: dict[str, list[Job]] = {w.id: [] for w in workers}
    limit = sum(max(w.concurrency, 1) for w in workers) * 2 + 100
    jobs = (
        reads.jobs()
        .filter(state=JobState.RUNNING, worker_id__in=list(held))
        .only("id", "name", "queue", "worker_id", "lease_epoch", "lease_expires_at")
        .order_by("worker_id", "id")[:limit]
    )
    for job in jobs:
        held[job.worker_id].append(job)
    rows = []
    for worker in workers:
        silent = timedelta(
            seconds=int(max(now - worker.last_seen_at, timedelta(0)).total_seconds())
        )
        rows.append(
            WorkerRow(
                worker,
                silent,
                silent > stale_after,
                held[worker.id],
                claim_trouble(worker, now),
            )
        )
    return rows


@admin.register(Worker)
class WorkerAdmin(OverviewAdmin):
    """Read-only: workers register and deregister themselves."""

    overview_title = "Workers"
    overview_template = "dispatch_jobs/admin/workers.html"

    def overview_context(self, request: HttpRequest) -> dict[str, Any]:
        return {
            "rows": worker_rows(),
            "stale_after": settings.heartbeat_interval * STALE_AFTER_BEATS,
            "unhealthy_after": settings.heartbeat_interval,
        }
