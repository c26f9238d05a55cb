"""Completion: the worker's fenced outcome writes, batched, with each written
attempt's usage row; and the purge of finished jobs past their retention.

A completion is a fenced write like ``update_leased_job`` (running, held by this
worker, at this epoch; never the lease-owned columns), narrowed to the columns
an attempt's outcome changes (``transitions.OUTCOME_COLUMNS``), with the times
that decide readiness taken from the database's clock: a retry's ``run_at`` is
database-now plus the backoff, so worker clock skew cannot make a retry run
early or late. Each engine writes a batch its own way (``engine.complete``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from django.db import transaction
from django.db.models import Q, QuerySet

from ..models import Job, JobState
from . import db
from .transitions import Settled


def complete_leased_jobs(worker_id: str, settled: Sequence[Settled]) -> set[int]:
    """Write many outcomes in one transaction, each behind its own fence, and a
    usage row for each written one that carries ``spent``.

    Returns the ids whose lease was lost (or whose row is gone): those rows are
    untouched, no usage is recorded for them, and the caller discards their
    outcome. One transaction for the batch is one commit (and on SQLite one
    write lock) instead of one per job; the usage rows share it, so an attempt
    is measured exactly when its outcome is stored.
    """
    if not settled:
        return set()
    return db.engine().complete(worker_id, sorted(settled, key=lambda s: s.job_id))


def purge_finished_jobs(
    *, completed_retention: timedelta, failed_retention: timedelta, limit: int
) -> int:
    """Delete up to ``limit`` finished jobs past their retention (by the database's
    clock): completed ones after ``completed_retention``, failed and cancelled ones
    (the dead letters an operator may still want to replay) after
    ``failed_retention``. Returns how many rows were removed."""
    if limit <= 0:
        return 0
    expired = Q(state=JobState.COMPLETED, completed_at__lt=db.now_minus(completed_retention))
    expired |= Q(
        state__in=[JobState.FAILED, JobState.CANCELLED],
        completed_at__lt=db.now_minus(failed_retention),
    )
    with transaction.atomic(using=db.alias()):
        # Locked as read (SKIP LOCKED: a row another session is changing, a
        # replay say, is left for the next run), so nothing can change a chosen
        # row before the delete; SQLite's IMMEDIATE transaction holds the whole
        # database instead. The delete tests the predicate again all the same:
        # it is what decides, row by row, and a DEFERRED SQLite transaction or
        # a caller's weaker isolation must not make it delete a live row.
        ids = list(
            _jobs()
            .filter(expired)
            .order_by("id")
            .select_for_update(skip_locked=True)
            .values_list("id", flat=True)[:limit]
        )
        if not ids:
            return 0
        # The collector sets replay_of to NULL on any replay pointing at a purged row.
        _, per_model = _jobs().filter(expired, id__in=ids).delete()
    return per_model.get(Job._meta.label, 0)


def _jobs() -> QuerySet[Job]:
    return Job.objects.using(db.alias())
