"""Completion: the worker's fenced outcome writes, batched, and the purge of
finished jobs past their retention.

A completion is the fenced write of ``update_leased_job`` (running, held by this
worker, at this epoch; never the lease-owned columns), with the times that decide
readiness taken from the database's clock: a retry's ``run_at`` is database-now
plus the backoff, so worker clock skew cannot make a retry run early or late.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

from django.db import transaction
from django.db.models import Q, QuerySet
from django.db.models.functions import Now

from ..models import FINISHED_STATES, Job, JobState
from . import db
from .leases import _fenced_update_values, _held


@dataclass(frozen=True)
class Completion:
    """One attempt's outcome to persist: ``job`` carries the new column values
    (state, attempts, last_error, return_value ...); ``epoch`` is the lease it was
    run under; ``retry_in`` (state retrying only) is the backoff from database-now."""

    job: Job
    epoch: int
    retry_in: timedelta | None = None


def complete_leased_jobs(worker_id: str, completions: Sequence[Completion]) -> set[int]:
    """Write many outcomes in one transaction, each behind its own fence.

    Returns the ids whose lease was lost (or whose row is gone): those rows are
    untouched, and the caller discards their outcome. One transaction for the
    batch is one commit (and on SQLite one write lock) instead of one per job.
    """
    lost: set[int] = set()
    if not completions:
        return lost
    ordered = sorted(completions, key=lambda c: c.job.pk)
    with transaction.atomic(using=db.alias()):
        # Lock the rows first, in id order: a heartbeat renewing some of the same
        # leases then waits for this batch instead of deadlocking with it.
        list(
            _jobs()
            .filter(id__in=[c.job.pk for c in ordered])
            .order_by("id")
            .select_for_update()
            .values_list("id", flat=True)
        )
        for completion in ordered:
            job = completion.job
            written = _held(job.pk, worker_id, completion.epoch).update(
                **_fenced_values(completion)
            )
            if not written:
                lost.add(job.pk)
    return lost


def _fenced_values(completion: Completion) -> dict[str, object]:
    job = completion.job
    values = _fenced_update_values(job)
    if job.state in FINISHED_STATES:
        values["completed_at"] = Now()
    if job.state == JobState.RETRYING:
        values["run_at"] = db.now_plus(completion.retry_in or timedelta(0))
    return values


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
    ids = list(_jobs().filter(expired).order_by("id").values_list("id", flat=True)[:limit])
    if not ids:
        return 0
    # The collector sets replay_of to NULL on any replay pointing at a purged row.
    _, per_model = _jobs().filter(id__in=ids).delete()
    return per_model.get(Job._meta.label, 0)


def _jobs() -> QuerySet[Job]:
    return Job.objects.using(db.alias())
