"""Periodic schedules: syncing code declarations, firing a tick exactly once,
enabling, running now, and the fired ticks' retention.

Exactly once per tick: ``fire_schedule_tick`` inserts the unique (schedule, tick)
row and enqueues the job in one transaction. Whichever worker inserts the row
first enqueues; any other worker racing on the same tick fails on the key and
enqueues nothing. Racers on one schedule queue on its row lock (taken first), so
the loser reaches the key once the winner has committed. ``next_fire_at`` only ever moves forward,
so a slow racer cannot wind a schedule back.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import NamedTuple

from django.db import IntegrityError, transaction
from django.db.models import Q, QuerySet
from django.db.models.functions import Now

from ..models import Job, Schedule, ScheduleSource, ScheduleTick
from ..schedules import DEFINITION, ScheduleSpec
from ..ticks import next_tick
from . import db
from .enqueue import enqueue_job

# Schedules read per firing pass: a pass fires at most this many.
DUE_BATCH = 100


class SyncReport(NamedTuple):
    created: list[str]
    updated: list[str]
    undeclared: list[str]  # code schedules no longer declared: left as they are


def _schedules() -> QuerySet[Schedule]:
    return Schedule.objects.using(db.alias())


def next_fire_of(schedule: Schedule, after: datetime) -> datetime:
    return next_tick(schedule.cron, schedule.interval, schedule.timezone, after)


def sync_schedules(specs: Sequence[ScheduleSpec]) -> SyncReport:
    """Write the code-declared schedules: create the missing ones (enabled as
    declared), overwrite the definition of existing ones, and never touch an
    existing row's ``enabled``: that is the operator's. A changed timing
    recomputes the next fire from now. Safe for many workers starting at once."""
    now = db.database_now()
    created, updated = [], []
    for spec in specs:
        definition = {**spec.definition(), "source": ScheduleSource.CODE}
        row = _schedules().filter(name=spec.name).first()
        if row is None:
            new = Schedule(name=spec.name, enabled=spec.enabled, **definition)
            new.next_fire_at = next_fire_of(new, now)
            try:
                with transaction.atomic(using=db.alias()):
                    new.save(using=db.alias(), force_insert=True)
            except IntegrityError:
                continue  # another worker created it a moment ago, from the same code
            created.append(spec.name)
            continue
        changed = {key: value for key, value in definition.items() if getattr(row, key) != value}
        if not changed:
            continue
        if changed.keys() & {"cron", "interval", "timezone"}:
            for key, value in changed.items():
                setattr(row, key, value)
            changed["next_fire_at"] = next_fire_of(row, now)
        _schedules().filter(pk=row.pk).update(**changed, updated_at=Now())
        updated.append(spec.name)
    declared = {spec.name for spec in specs}
    undeclared = sorted(
        name
        for name in _schedules().filter(source=ScheduleSource.CODE).values_list("name", flat=True)
        if name not in declared
    )
    return SyncReport(created, updated, undeclared)


def due_schedules(now: datetime, limit: int = DUE_BATCH) -> list[Schedule]:
    """Enabled schedules whose next fire is at or before ``now``, earliest first."""
    return list(
        _schedules()
        .filter(enabled=True, next_fire_at__lte=now)
        .order_by("next_fire_at", "id")[:limit]
    )


def fire_schedule_tick(
    schedule: Schedule, tick: datetime, job: Job, next_fire_at: datetime
) -> Job | None:
    """Enqueue ``job`` for ``schedule``'s ``tick`` unless that tick fired already;
    the enqueued job, or None when another worker fired the tick first.

    One transaction (a savepoint inside the caller's): the tick row, the job, the
    schedule's last fire and next fire commit together or not at all.
    """
    alias = db.alias()
    with transaction.atomic(using=alias):
        # The schedule's row lock first, so racers queue here. Without it, on
        # MariaDB each racer's tick INSERT takes a shared lock on the schedule row
        # (the foreign key's check) and the winner's UPDATE of that row below then
        # waits on the losers while they wait on its tick: a deadlock.
        list(_schedules().select_for_update().filter(pk=schedule.pk).values_list("pk"))
        try:
            # Its own savepoint: the key's refusal rolls back this INSERT only, and
            # the transaction goes on to move the schedule forward.
            with transaction.atomic(using=alias):
                fired = ScheduleTick.objects.using(alias).create(schedule_id=schedule.pk, tick=tick)
        except IntegrityError:
            advance_schedule(schedule.pk, next_fire_at)
            return None
        enqueue_job(job)
        ScheduleTick.objects.using(alias).filter(pk=fired.pk).update(job_id=job.pk)
        _schedules().filter(
            Q(last_tick_at__isnull=True) | Q(last_tick_at__lt=tick), pk=schedule.pk
        ).update(last_tick_at=tick, last_fired_at=Now(), last_job_id=job.pk, last_error="")
        advance_schedule(schedule.pk, next_fire_at)
    return job


def advance_schedule(schedule_id: int, next_fire_at: datetime, error: str | None = None) -> None:
    """Move the schedule's next fire forward to ``next_fire_at`` (never back), and
    record ``error`` (why its tick could not fire) when given."""
    rows = _schedules().filter(pk=schedule_id)
    rows.filter(Q(next_fire_at__isnull=True) | Q(next_fire_at__lt=next_fire_at)).update(
        next_fire_at=next_fire_at
    )
    if error is not None:
        rows.update(last_error=error[:2000])


def stop_schedule(schedule_id: int, error: str) -> None:
    """Clear the next fire of a schedule whose ticks cannot be computed, with the
    reason: it fires again once an operator saves a working definition."""
    _schedules().filter(pk=schedule_id).update(next_fire_at=None, last_error=error[:2000])


def run_schedule_now(schedule: Schedule, job: Job) -> Job:
    """Enqueue ``job`` for ``schedule`` at once, outside its ticks (which go on as
    planned), and record it as the schedule's last fire."""
    with transaction.atomic(using=db.alias()):
        enqueue_job(job)
        _schedules().filter(pk=schedule.pk).update(
            last_fired_at=Now(), last_job_id=job.pk, last_error=""
        )
    return job


def set_schedules_enabled(ids: Sequence[int], enabled: bool) -> int:
    """Enable or disable schedules; the count changed. An enabled schedule's next
    fire is recomputed from now, so the ticks it slept through are not "missed"."""
    alias = db.alias()
    changed = 0
    now = db.database_now()
    with transaction.atomic(using=alias):
        for schedule in (
            _schedules().select_for_update().filter(pk__in=ids).exclude(enabled=enabled)
        ):
            fields = {"enabled": enabled, "updated_at": Now()}
            if enabled:
                fields["next_fire_at"] = next_fire_of(schedule, now)
            changed += _schedules().filter(pk=schedule.pk).update(**fields)
    return changed


def save_schedule(schedule: Schedule) -> Schedule:
    """Write a schedule edited by an operator (checked by the admin's form): its
    name, definition and enabled flag, never what firing writes (last fire, last
    job), so a tick fired meanwhile is not undone. The next fire is recomputed from
    now when the schedule is new, its timing changed, or it was just enabled."""
    alias = db.alias()
    before = _schedules().filter(pk=schedule.pk).first() if schedule.pk else None
    timing = ("cron", "interval", "timezone")
    retimed = before is None or any(getattr(before, k) != getattr(schedule, k) for k in timing)
    enabled_now = before is not None and schedule.enabled and not before.enabled
    if retimed or enabled_now:
        schedule.next_fire_at = next_fire_of(schedule, db.database_now())
    if before is None:
        schedule.save(using=alias, force_insert=True)
        return schedule
    fields = ["name", "source", "enabled", *DEFINITION]
    if retimed or enabled_now:
        fields.append("next_fire_at")
    schedule.save(using=alias, update_fields=fields)
    _schedules().filter(pk=schedule.pk).update(updated_at=Now())
    return schedule


def delete_schedule(schedule_id: int) -> None:
    _schedules().filter(pk=schedule_id).delete()


def purge_schedule_ticks(before: datetime, limit: int) -> int:
    """Delete up to ``limit`` fired-tick rows older than ``before``; the count.
    A tick's row guards it only while workers may still race on it: seconds."""
    alias = db.alias()
    ids = list(
        ScheduleTick.objects.using(alias)
        .filter(fired_at__lt=before)
        .order_by("id")
        .values_list("id", flat=True)[:limit]
    )
    if not ids:
        return 0
    return ScheduleTick.objects.using(alias).filter(pk__in=ids).delete()[0]
