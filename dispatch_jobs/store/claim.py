"""Claiming ready jobs: the seed's ``DequeueJobs``.

One transaction selects the ready rows that fit, locks them (``FOR UPDATE SKIP
LOCKED`` on PostgreSQL and MariaDB; on SQLite the IMMEDIATE transaction holds the
database's write lock from BEGIN), marks them running and, when asked, grants the
lease in the very same transaction. The fit test is part of the SELECT, so a job
that does not fit is never written and never consumes a slot of the limit.
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import Case, F, IntegerField, Q, QuerySet, Value, When
from django.db.models.functions import Now, Replace

from ..exceptions import LeaseWithoutWorker
from ..models import Job, JobState, QueueControl
from ..resources import CUSTOM_KEY_SEPARATOR as SEP
from ..resources import STANDARD_KEYS
from . import db
from .options import ClaimOptions


def claim_jobs(opts: ClaimOptions) -> list[Job]:
    """Atomically claim up to ``opts.limit`` ready jobs that fit ``opts``.

    Returns them ordered by priority descending, then locality-preferred first,
    then run_at ascending, then id.
    """
    # Both checks come before validation and before any query, as in the seed.
    if opts.limit <= 0 or not opts.queues:
        return []
    if opts.grants() and not opts.worker_id:
        raise LeaseWithoutWorker()

    with transaction.atomic(using=db.alias()):
        candidates = _eligible(opts).select_for_update(skip_locked=True)
        ids = list(candidates.values_list("id", flat=True)[: opts.limit])
        if not ids:
            return []
        Job.objects.using(db.alias()).filter(id__in=ids).update(**_claim_changes(opts))
        jobs = list(Job.objects.using(db.alias()).filter(id__in=ids))
    preferred = set(opts.preferred_hashes())
    jobs.sort(key=lambda j: (-j.priority, j.primary_input_hash not in preferred, j.run_at, j.id))
    return jobs


def _eligible(opts: ClaimOptions) -> QuerySet[Job]:
    """Ready jobs in the requested queues that fit, in claim order."""
    paused = QueueControl.objects.using(db.alias()).filter(paused=True).values("name")
    qs = (
        Job.objects.using(db.alias())
        .filter(state__in=[JobState.PENDING, JobState.RETRYING], queue__in=list(opts.queues))
        .filter(run_at__lte=Now())
        .exclude(queue__in=paused)
    )
    if opts.reserved_for is not None:
        qs = qs.filter(id=opts.reserved_for)
    aliases, fit = _fit_predicate(opts)
    qs = qs.alias(**aliases).filter(fit)
    order: list = [F("priority").desc()]
    preferred = opts.preferred_hashes()
    if preferred:
        qs = qs.annotate(
            _unpreferred=Case(
                When(primary_input_hash__in=preferred, then=Value(0)),
                default=Value(1),
                output_field=IntegerField(),
            )
        )
        order.append(F("_unpreferred").asc())
    order += [F("run_at").asc(), F("id").asc()]
    return qs.order_by(*order)


def _fit_predicate(opts: ClaimOptions) -> tuple[dict[str, object], Q]:
    """The fit test as (aliases, predicate), evaluated inside the SELECT."""
    if opts.is_unbounded():
        # The resource model is off for this caller: everything is eligible,
        # custom-key jobs included (the backward-compatibility guarantee).
        return {}, Q()
    budget = opts.budget or {}
    predicate = Q()
    for key in STANDARD_KEYS:
        if key in budget:  # an absent key is unconstrained; a present 0 is a limit
            predicate &= Q(**{f"{key}__lte": budget[key]})
    # Custom keys: every key the job needs must be offered. Strip each offered
    # ",key," from the job's delimited string; exactly a subset leaves ",". The
    # delimiters stop "fpga" from matching "fpga-large", and stripping (rather
    # than a substring search) makes the test subset containment, whatever order
    # or extra keys the offer has. Bounded with nothing offered: no custom jobs.
    remaining: F | Replace = F("custom_keys")
    for key in sorted(set(opts.custom_keys)):
        remaining = Replace(remaining, Value(f"{SEP}{key}{SEP}"), Value(SEP))
    custom = Q(custom_keys="")
    if opts.custom_keys:
        custom |= Q(_custom_left=SEP)
        return {"_custom_left": remaining}, predicate & custom
    return {}, predicate & custom


def _claim_changes(opts: ClaimOptions) -> dict[str, object]:
    changes: dict[str, object] = {
        "state": JobState.RUNNING,
        # The start of this attempt. Also what reclaim measures an unleased job's
        # silence from, so it must be fresh on every claim.
        "started_at": Now(),
        "updated_at": Now(),
    }
    if opts.grants():
        assert opts.lease_ttl is not None
        changes.update(
            worker_id=opts.worker_id,
            lease_expires_at=db.now_plus(opts.lease_ttl),
            lease_epoch=F("lease_epoch") + 1,
            heartbeat_at=Now(),
        )
    return changes
