"""Claiming ready jobs: the seed's ``DequeueJobs``.

One transaction selects the ready rows that fit, locks them, marks them running
and, when asked, grants the lease in the very same transaction. The fit test is
part of the SELECT, so a job that does not fit is never written and never
consumes a slot of the limit. What is ready, what fits and what a claim writes
are ``store.selection``; how each database selects and locks is its engine's
``claim``. Queues with concurrency or rate limits are claimed from under their
control row's lock, before the others (``store.limited_claim``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime

from ..exceptions import LeaseWithoutWorker
from ..models import Job
from . import db
from .limited_claim import claim_limited
from .options import ClaimOptions
from .queues import limited_queues
from .selection import eligible


def claim_jobs(opts: ClaimOptions) -> list[Job]:
    """Atomically claim up to ``opts.limit`` ready jobs that fit ``opts``.

    Returns them ordered by priority descending, then locality-preferred first,
    then run_at ascending, then id.
    """
    # Both checks come before validation and before any query, as in the seed.
    if opts.limit <= 0 or not (opts.queues or opts.every_queue):
        return []
    if opts.grants() and not opts.worker_id:
        raise LeaseWithoutWorker()
    jobs = _claim(opts)
    preferred = set(opts.preferred_hashes())

    def order(job: Job) -> tuple[object, ...]:
        # A row's value that could not be read (None; its job fails alone) or that
        # is not of its column's type (SQLite stores what it is given) sorts as
        # the earliest time, the default priority: never compared with the rest.
        run_at, priority = job.run_at, job.priority
        readable = isinstance(run_at, datetime)
        return (
            -(priority if type(priority) is int else 0),
            job.primary_input_hash not in preferred,
            readable,
            run_at if readable else None,
            job.id,
        )

    jobs.sort(key=order)
    return jobs


def _claim(opts: ClaimOptions) -> list[Job]:
    """Queues with limits first, each under its lock (``limited_claim``), then
    the rest in one statement, which skips them. Unlimited queues pay one look
    at a per-process list (``limited_queues``), refreshed once a second."""
    limited = limited_queues()
    if opts.every_queue:
        mine = limited
    elif limited:
        mine = limited.intersection(opts.queues)
    else:
        mine = frozenset()
    if not mine:
        return db.engine().claim(opts)
    jobs = claim_limited(opts, mine)
    if len(jobs) >= opts.limit or (not opts.every_queue and mine.issuperset(opts.queues)):
        return jobs
    return jobs + db.engine().claim(dataclasses.replace(opts, limit=opts.limit - len(jobs)))


def suspects_waiting(
    queues: Sequence[str], every_queue: bool = False, executions: Sequence[str] | None = None
) -> bool:
    """Whether a suspect (``Quarantine.SUSPECT``: a job to run alone) is ready in
    ``queues`` (in any queue with ``every_queue``), of a rung in ``executions``
    (any rung: None). Served by the small
    ``dj_job_suspect`` index: cheap at any size."""
    if not queues and not every_queue:
        return False
    # limits_held: a look, not a claim; a suspect of a queue with limits is
    # then claimed under that queue's lock like any of its jobs.
    opts = ClaimOptions(
        queues=list(queues),
        every_queue=every_queue,
        limit=1,
        suspects="only",
        limits_held=True,
        executions=executions,
    )
    return eligible(opts).exists()
