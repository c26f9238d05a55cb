"""Leases: renewal, reclaim, hand-back, and the fenced write.

The lease-owned columns (worker_id, lease_expires_at, lease_epoch, heartbeat_at)
have exactly three writers: the grant inside ``claim_jobs``, renewal
(``renew_lease(s)``, and ``heartbeat_job``, a renewal that does not extend, behind
the same fence), and eviction (``reclaim_expired_leases`` and the drain's
``release_leases``). ``update_leased_job`` is deliberately not a fourth.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import F, Q, QuerySet
from django.db.models.functions import Coalesce, Now

from ..attempts import attempt_list
from ..conf import settings
from ..exceptions import JobNotFound, LeaseLost
from ..models import Job, JobState, Quarantine
from . import db
from .enqueue import derive_resource_columns

LEASE_COLUMNS = frozenset({"worker_id", "lease_expires_at", "lease_epoch", "heartbeat_at"})
# Never written by a fenced update: the lease columns, the key, and bookkeeping.
_NOT_WRITTEN_BY_FENCED_UPDATE = LEASE_COLUMNS | {"id", "created_at", "updated_at"}


def _jobs() -> QuerySet[Job]:
    return Job.objects.using(db.alias())


def fenced(job_id: int, worker_id: str, epoch: int) -> QuerySet[Job]:
    """The fence: the row is still running, held by this worker, at this epoch."""
    return _jobs().filter(id=job_id, state=JobState.RUNNING, worker_id=worker_id, lease_epoch=epoch)


def renew_lease(job_id: int, worker_id: str, epoch: int, ttl: timedelta) -> None:
    """Extend the lease to database-now + ttl, only while the caller still holds
    it. Raises ``LeaseLost`` otherwise: that is the whole fencing mechanism, a
    paused worker learns within one heartbeat that it no longer owns the job."""
    if not fenced(job_id, worker_id, epoch).update(
        lease_expires_at=db.now_plus(ttl), heartbeat_at=Now()
    ):
        raise LeaseLost(job_id, worker_id, epoch)


def renew_leases(worker_id: str, leases: Iterable[tuple[int, int, timedelta]]) -> set[int]:
    """Renew many leases ``(job_id, epoch, ttl)`` held by one worker, one UPDATE
    per distinct ttl. Returns the ids whose lease was lost (not renewed).

    Renewal never waits on one row: a row whose lock is held elsewhere (an
    operator's session, a long transaction) is skipped, neither renewed nor
    lost, and tried again at the next beat, while every other lease is renewed
    on time. Each ttl's UPDATE has its own savepoint: one the database refuses
    (an expiry it cannot represent) leaves its rows for the next beat and the
    other groups renewed."""
    by_ttl: dict[timedelta, list[tuple[int, int]]] = {}
    for job_id, epoch, ttl in leases:
        by_ttl.setdefault(ttl, []).append((job_id, epoch))
    lost: set[int] = set()
    with transaction.atomic(using=db.alias()):
        for ttl, held in by_ttl.items():
            kept, unread = _lock_held(worker_id, held, skip_locked=True)
            if kept:
                try:
                    with transaction.atomic(using=db.alias()):
                        _jobs().filter(id__in=kept).update(
                            lease_expires_at=db.now_plus(ttl), heartbeat_at=Now()
                        )
                except Exception as exc:  # noqa: BLE001
                    if not db.refused_by_content(exc) and not isinstance(exc, OverflowError):
                        raise
                    # Not renewed, not lost: the next beat tries again.
            lost |= {job_id for job_id, _ in held} - set(kept) - unread
            if unread:
                # Skipped because locked elsewhere, or gone: only a gone row is lost.
                present = set(_jobs().filter(id__in=list(unread)).values_list("id", flat=True))
                lost |= unread - present
    return lost


def _lock_held(
    worker_id: str, held: Sequence[tuple[int, int]], *, skip_locked: bool = False
) -> tuple[list[int], set[int]]:
    """Lock the rows of ``held`` (``(job_id, epoch)`` pairs); return, in id order,
    the ids whose lease this worker still holds at that epoch, and the set of ids
    whose row could not be read (gone, or with ``skip_locked`` locked elsewhere).

    The rows are locked by key alone, in id order (the order the completer's
    batches lock in, so a renewal, a hand-back and a completion never deadlock),
    and the fence is tested here on what the lock read: the latest version,
    which nobody can change before the caller's transaction ends. Putting the
    fence in the query instead lets the planner test it through the worker_id
    index, reading every row the worker ever ran.
    """
    epochs = dict(held)
    rows = list(
        _jobs()
        .filter(id__in=list(epochs))
        .order_by("id")
        .select_for_update(skip_locked=skip_locked)
        .values_list("id", "lease_epoch", "worker_id", "state")
    )
    kept = [
        job_id
        for job_id, epoch, holder, state in rows
        if epoch == epochs[job_id] and holder == worker_id and state == JobState.RUNNING
    ]
    return kept, set(epochs) - {row[0] for row in rows}


def reclaim_expired_leases(
    limit: int, *, unleased_grace: timedelta | None = None, max_evictions: int | None = None
) -> list[Job]:
    """Return to pending every running job whose lease expired (by the database's
    clock), clearing the holder, bumping lease_epoch (the fence) and evict_count.
    retry_count is never touched: a lost lease is infrastructure, not failure.

    Also adopts a running job that carries no lease at all, once it has been
    silent (no heartbeat, or no start) for ``unleased_grace``: a coarse fallback
    for rows claimed without a lease whose worker died.

    ``max_evictions``: a job whose lease lapsed more than this many times while
    it ran alone fails as poison instead of going back to pending (``_evict``
    says how poison is attributed). Every eviction is an entry in the job's
    attempts log, and ``started_at`` is cleared as the seed's reclaim clears it.

    Selection and update happen in one transaction over rows locked with SKIP
    LOCKED, so two reclaimers never take the same job. Order is not part of the
    contract (here: longest-expired first). ``limit <= 0`` returns [] untouched.
    """
    if limit <= 0:
        return []
    grace = unleased_grace if unleased_grace is not None else settings.unleased_reclaim_grace
    expired = Q(lease_expires_at__lt=Now())
    silent_unleased = Q(lease_expires_at__isnull=True) & Q(_silent_since__lt=db.now_minus(grace))
    with transaction.atomic(using=db.alias()):
        ids = list(
            _jobs()
            .filter(state=JobState.RUNNING)
            .alias(_silent_since=Coalesce("heartbeat_at", "started_at", "updated_at"))
            .filter(expired | silent_unleased)
            .order_by(F("lease_expires_at").asc(nulls_last=True), "id")
            .select_for_update(skip_locked=True)
            .values_list("id", flat=True)[:limit]
        )
        return _evict(ids, max_evictions)


def release_leases(worker_id: str, held: Sequence[tuple[int, int]]) -> list[Job]:
    """Hand jobs back (a graceful drain): each ``(job_id, epoch)`` still held by
    this worker returns to pending exactly as a reclaim would take it, counted as
    an eviction but never towards poison (a drain says nothing about the job)."""
    released: list[Job] = []
    left = list(held)
    # A row locked elsewhere is skipped, not waited for, and tried again shortly (a
    # lease renewal or an outcome write holds it for a moment); one still locked
    # after the last try keeps its lease, which lapses, and reclaim takes it back.
    for attempt in range(HAND_BACK_TRIES):
        if not left:
            break
        if attempt:
            time.sleep(HAND_BACK_PAUSE)
        with transaction.atomic(using=db.alias()):
            kept, unread = _lock_held(worker_id, left, skip_locked=True)
            released += _evict(kept, None, why=HANDED_BACK)
        left = [(job_id, epoch) for job_id, epoch in left if job_id in unread]
    return released


# Handing jobs back: how often to try a row locked elsewhere, and the pause between.
HAND_BACK_TRIES = 10
HAND_BACK_PAUSE = 0.05

# Why a job left its worker, as its attempts log records it.
LAPSED = "evicted"  # the lease lapsed: the worker stopped renewing it
HANDED_BACK = "handed_back"  # a draining worker gave it back unfinished


def _evict(ids: list[int], max_evictions: int | None, *, why: str = LAPSED) -> list[Job]:
    """Move locked running rows back to pending (or to failed when poisoned),
    each with an entry in its attempts log saying which worker lost it and why.

    The attempt's start moves from ``started_at`` (cleared, as the seed's reclaim
    clears it) into that entry, so results and the admin still show it.

    Poison is attributed exactly: a lapsed lease makes the job a suspect
    (``Quarantine.SUSPECT``: its worker may have died of it, or of a job beside
    it), and a suspect runs alone next. Only a lapse while running alone counts
    (``lone_evictions``), and a job with more than ``max_evictions`` of those
    fails. A hand-back proves nothing either way and counts nothing.
    """
    if not ids:
        return []
    engine = db.engine()
    now = db.database_now()
    # Read as a claim reads (``Engine.read``): one row's value no driver reads back
    # is that job's, never a failure of the batch, so the lapsed leases beside it
    # are still reclaimed. Such a value is None here (the entry then has no start)
    # and fails its job at its next claim.
    for job in engine.read(ids):
        values = _eviction(
            job.worker_id,
            job.started_at,
            job.attempts,
            job.quarantine,
            job.lone_evictions,
            max_evictions,
            why,
            now,
        )
        if job.cancel_requested_at is not None:
            # An operator asked for it to stop: it stops here, never to run again.
            values.update(_cancelled_on_eviction(values, job.cancel_requested_by))
        _jobs().filter(id=job.pk).update(**values)
    return engine.read(ids)


def _eviction(
    holder: str,
    started_at: datetime | None,
    attempts: object,
    quarantine: int,
    lone: int,
    max_evictions: int | None,
    why: str,
    now: datetime,
) -> dict[str, object]:
    """The columns one eviction writes (see ``_evict``)."""
    alone = quarantine == Quarantine.ALONE
    values: dict[str, object] = dict(
        state=JobState.PENDING,
        worker_id="",
        lease_expires_at=None,
        heartbeat_at=None,
        started_at=None,
        lease_epoch=F("lease_epoch") + 1,
        evict_count=F("evict_count") + 1,
        updated_at=Now(),
    )
    if why == HANDED_BACK:
        message = f"handed back unfinished by draining worker {holder or '?'}"
        values["quarantine"] = Quarantine.SUSPECT if alone else quarantine
    else:
        lone += alone
        values.update(quarantine=Quarantine.SUSPECT, lone_evictions=lone)
        company = "running alone" if alone else "sharing its worker with other jobs"
        message = (
            f"lease lapsed while {company} on worker {holder or '?'}: the worker stopped "
            "renewing it (it crashed, was killed, or lost the database)"
        )
        if max_evictions is not None and lone > max_evictions:
            message += (
                f"; evicted {lone} times while running alone, more than the "
                f"{max_evictions} allowed: failed as poison"
            )
            values.update(
                state=JobState.FAILED,
                completed_at=Now(),
                quarantine=Quarantine.NONE,
                last_error=f"WorkerLost: {message}.",
            )
    log = attempt_list(attempts)
    entry = {
        "attempt": len(log) + 1,
        "worker_id": holder,
        "status": "failed" if values["state"] == JobState.FAILED else why,
        "exception_class": "dispatch_jobs.exceptions.WorkerLost",
        "message": message,
        "traceback": "",
        "started_at": started_at.isoformat() if started_at else None,
        "finished_at": now.isoformat(),
    }
    values["attempts"] = [*log, entry]
    return values


def _cancelled_on_eviction(values: dict[str, object], by: str) -> dict[str, object]:
    """An eviction of a job whose stop was requested finishes it, cancelled."""
    entries = list(values["attempts"])  # type: ignore[call-overload]
    entries[-1] = {**entries[-1], "status": "cancelled"}
    return dict(
        state=JobState.CANCELLED,
        completed_at=Now(),
        quarantine=Quarantine.NONE,
        last_error=cancel_message(by),
        attempts=entries,
    )


def cancel_message(by: str) -> str:
    """``last_error`` of a job stopped at an operator's request."""
    return f"Cancelled while running, at the request of {by or 'an operator'}."


def cancel_requests(worker_id: str, job_ids: Sequence[int]) -> dict[int, str]:
    """Of ``job_ids``, those this worker holds whose stop an operator requested,
    with who requested it. One read by key: a heartbeat asks every beat."""
    if not job_ids:
        return {}
    return dict(
        _jobs()
        .filter(id__in=list(job_ids), worker_id=worker_id, state=JobState.RUNNING)
        .filter(cancel_requested_at__isnull=False)
        .values_list("id", "cancel_requested_by")
    )


def _fenced_update_values(job: Job) -> dict[str, object]:
    """What a fenced write of ``job`` sets: every column but the lease-owned ones,
    the id and the creation time, taken from ``job``; and ``updated_at``, now.
    The claim's scalar columns are recomputed from ``job.resources`` first."""
    derive_resource_columns(job)
    values: dict[str, object] = {
        field.attname: getattr(job, field.attname)
        for field in Job._meta.concrete_fields
        if field.attname not in _NOT_WRITTEN_BY_FENCED_UPDATE
        and field.name not in _NOT_WRITTEN_BY_FENCED_UPDATE
    }
    values["updated_at"] = Now()
    return values


def update_leased_job(job: Job, worker_id: str, epoch: int) -> None:
    """Persist ``job`` only while the caller still holds its lease.

    Writes every column except the lease-owned ones (and the id and creation
    time): ``job`` is the caller's stale snapshot, and writing its
    lease_expires_at back would roll the real expiry backwards. Resources that
    are not canonical amounts raise ``InvalidJob`` before anything is written.
    Raises ``LeaseLost`` (row untouched) when the fence fails, ``JobNotFound`` when the
    row is gone.
    """
    if fenced(job.pk, worker_id, epoch).update(**_fenced_update_values(job)):
        return
    if not _jobs().filter(id=job.pk).exists():
        raise JobNotFound(job.pk)
    raise LeaseLost(job.pk, worker_id, epoch)
