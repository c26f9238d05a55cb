"""The portable part of a claim: what is ready, what fits, and what a claim
writes. Every engine builds its claim from these; how it selects, locks and
writes them is the engine's (``store.engines``)."""

from __future__ import annotations

from django.db.models import Case, F, IntegerField, Q, QuerySet, Value, When
from django.db.models.functions import Now, Replace

from ..models import LIMITED, Job, JobState, Quarantine, QueueControl
from ..resources import CUSTOM_KEY_SEPARATOR as SEP
from ..resources import STANDARD_KEYS
from . import db
from .options import ClaimOptions


def eligible(opts: ClaimOptions) -> QuerySet[Job]:
    """Ready jobs in the requested queues that fit, in claim order.

    Paused queues are skipped, and so are queues with limits unless the caller
    holds their lock (``store.limited_claim``): read in this very statement, so
    a limit set a moment ago already keeps the unlimited claim out of its queue.
    """
    skipped = Q(paused=True) if opts.limits_held else Q(paused=True) | LIMITED
    controls = QueueControl.objects.using(db.alias()).filter(skipped).values("name")
    qs = (
        Job.objects.using(db.alias())
        .filter(state__in=[JobState.PENDING, JobState.RETRYING])
        .filter(run_at__lte=Now())
        .exclude(queue__in=controls)
    )
    if opts.exclude_orgs:
        qs = qs.exclude(scope_org_id__in=list(opts.exclude_orgs))
    if not opts.every_queue:
        qs = qs.filter(queue__in=list(opts.queues))
    if opts.reserved_for is not None:
        qs = qs.filter(id=opts.reserved_for)
    if opts.executions is not None:
        # A job needs at least its rung: one this worker cannot provide is left for
        # a worker that can (a filter on the ready rows, after the index's order).
        qs = qs.filter(execution__in=list(opts.executions))
    if opts.skip:
        qs = qs.exclude(id__in=list(opts.skip))
    qs = qs.filter(suspect_predicate(opts))
    aliases, fit = fit_predicate(opts)
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


def suspect_predicate(opts: ClaimOptions) -> Q:
    """Suspects (jobs to run alone) excluded, only, or either (poison attribution)."""
    if opts.suspects == "exclude":
        return ~Q(quarantine=Quarantine.SUSPECT)
    if opts.suspects == "only":
        return Q(quarantine=Quarantine.SUSPECT)
    return Q()


def fit_predicate(opts: ClaimOptions) -> tuple[dict[str, object], Q]:
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


def claim_changes(opts: ClaimOptions) -> dict[str, object]:
    changes: dict[str, object] = {
        "state": JobState.RUNNING,
        # The start of this attempt. Also what reclaim measures an unleased job's
        # silence from, so it must be fresh on every claim.
        "started_at": Now(),
        "updated_at": Now(),
    }
    if opts.alone:
        changes["quarantine"] = Quarantine.ALONE
    if opts.grants():
        assert opts.lease_ttl is not None
        changes.update(
            worker_id=opts.worker_id,
            lease_expires_at=db.now_plus(opts.lease_ttl),
            lease_epoch=F("lease_epoch") + 1,
            heartbeat_at=Now(),
        )
    return changes
