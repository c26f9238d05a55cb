"""Claiming from queues with limits: fleet-wide concurrency, per-org concurrency
and rate, enforced inside the claim's transaction (docs/how-to/limits.md).

One transaction per limited queue. It first locks the queue's ``QueueControl``
row (``FOR UPDATE`` on PostgreSQL and MariaDB; on SQLite the IMMEDIATE
transaction already holds the database's write lock), so the claimers of one
queue take turns, however many workers race: each counts what runs (and what
started within the rate period) only after the previous one has committed its
claim, caps its own claim by the headroom left, and commits before the next
looks. Nothing else makes a job running: completions, releases and reclaims
only lower the counts, so the cap is never overshot. The unlimited claim's own
statement skips every queue with a limit (``selection.eligible``), so it cannot
slip past the lock.

The lock serialises the claims of one limited queue only: other queues, limited
or not, are claimed in parallel as before.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from django.db import transaction
from django.db.models import Count

from ..models import Job, JobState, QueueControl, QueueStart
from . import db
from .options import ClaimOptions


def claim_limited(opts: ClaimOptions, queues: Iterable[str]) -> list[Job]:
    """Claim up to ``opts.limit`` jobs from ``queues`` (each with limits), queue
    by queue in name order, each within its limits."""
    jobs: list[Job] = []
    for name in sorted(queues):
        want = opts.limit - len(jobs)
        if want <= 0:
            break
        jobs += _claim_queue(opts, name, want)
    return jobs


def _claim_queue(opts: ClaimOptions, name: str, want: int) -> list[Job]:
    alias = db.alias()
    with transaction.atomic(using=alias):
        control = QueueControl.objects.using(alias).select_for_update().filter(name=name).first()
        # No row (the caller's list of limited queues is a second old): as if
        # unlimited, still in this transaction. A paused queue: nothing.
        if control is not None and control.paused:
            return []
        queue_opts = dataclasses.replace(
            opts, queues=[name], every_queue=False, limit=want, limits_held=True
        )
        if control is None or not control.limited:
            return db.engine().claim(queue_opts)
        allowed = want
        if control.max_running is not None:
            allowed = min(allowed, control.max_running - _running(name))
        if control.rate_limit is not None and control.rate_period is not None:
            allowed = min(allowed, control.rate_limit - _recent_starts(name, control))
        if allowed <= 0:
            return []
        queue_opts = dataclasses.replace(queue_opts, limit=allowed)
        if control.max_running_per_org is None:
            jobs = db.engine().claim(queue_opts)
        else:
            jobs = _claim_per_org(queue_opts, control.max_running_per_org)
        if jobs and control.rate_limit is not None:
            QueueStart.objects.using(alias).bulk_create(QueueStart(queue=name) for _ in jobs)
        return jobs


def _running(queue: str) -> int:
    """Running jobs of ``queue``: a handful of rows through the running state."""
    return Job.objects.using(db.alias()).filter(queue=queue, state=JobState.RUNNING).count()


def _recent_starts(queue: str, control: QueueControl) -> int:
    """Starts of ``queue`` within the last rate period (database clock), once
    the older ones are dropped: the window never holds more than the rate."""
    assert control.rate_period is not None
    starts = QueueStart.objects.using(db.alias()).filter(queue=queue)
    starts.filter(started_at__lte=db.now_minus(control.rate_period)).delete()
    return starts.count()


def _claim_per_org(opts: ClaimOptions, per_org: int) -> list[Job]:
    """Claim up to ``opts.limit`` jobs with at most ``per_org`` of each scope org
    running (jobs without an org count as one org, ""), in rounds: orgs at their
    limit are left out of a round, and a round takes no more than the smallest
    headroom of any other org (an org with nothing running has ``per_org``), so
    no round can take one org past its limit."""
    running = dict(
        Job.objects.using(db.alias())
        .filter(queue=opts.queues[0], state=JobState.RUNNING)
        .values_list("scope_org_id")
        .annotate(n=Count("id"))
        .order_by()
    )
    jobs: list[Job] = []
    while len(jobs) < opts.limit:
        full = tuple(sorted(org for org, n in running.items() if n >= per_org))
        headroom = min((per_org - n for n in running.values() if n < per_org), default=per_org)
        step = dataclasses.replace(
            opts, limit=min(opts.limit - len(jobs), headroom), exclude_orgs=full
        )
        got = db.engine().claim(step)
        if not got:
            break
        jobs += got
        for job in got:
            running[job.scope_org_id] = running.get(job.scope_org_id, 0) + 1
    return jobs
