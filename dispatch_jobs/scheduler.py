"""The scheduler: which tick of each due schedule fires, and the job it enqueues.

Run by the elected maintenance worker (``worker/maintenance.py``, the
``schedules`` runner), once per maintenance tick. One worker fires, not all: N
workers polling the schedules table would multiply its reads by N for nothing.
The exactly-once guarantee does not rest on the election, though: the store's
unique (schedule, tick) row holds it, so two workers that both believe they lead
(a lapsed lease at a handover) still fire each tick once.

A tick is *missed* when it is more than ``grace`` late (the fleet was down, or
the schedule was). A schedule's ``missed`` policy then decides: ``skip`` fires
none of the missed ticks, ``latest`` fires once, for the latest of them. A tick
due within the grace always fires.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from . import database, names, store
from .backend import job_of_call
from .exceptions import DispatchJobsError, InvalidSchedule
from .models import Job, Schedule
from .schedules import declared_schedules
from .ticks import MissedTicks, latest_tick, next_tick

logger = logging.getLogger("dispatch_jobs.scheduler")

# Lateness up to which a tick is on time, not missed: covers the maintenance tick
# (5 s by default) and a leadership handover (a few ticks).
MIN_GRACE = timedelta(minutes=1)


@dataclass(frozen=True)
class Plan:
    """What to do for one due schedule: fire ``tick`` (None: fire nothing) and
    move the next fire to ``next_fire_at``."""

    tick: datetime | None
    next_fire_at: datetime


def plan(schedule: Schedule, now: datetime, grace: timedelta) -> Plan:
    """The tick to fire for a schedule due at ``now``, by its missed-tick policy."""
    due = schedule.next_fire_at or now
    timing = (schedule.cron, schedule.interval, schedule.timezone)
    latest = latest_tick(*timing, at=now, since=due)
    following = next_tick(*timing, after=now)
    if latest is None:  # its timing changed since: nothing of the new one was due
        return Plan(None, following)
    on_time = now - latest <= grace
    if on_time or schedule.missed == MissedTicks.LATEST:
        return Plan(latest, following)
    return Plan(None, following)


def job_for(schedule: Schedule) -> Job:
    """The unsaved job of one run of ``schedule``, checked as an enqueue is."""
    task = names.load_task(schedule.task)
    overrides: dict[str, Any] = {}
    if schedule.queue:
        overrides["queue_name"] = schedule.queue
    if schedule.priority is not None:
        overrides["priority"] = schedule.priority
    if overrides:
        task = task.using(**overrides)
    # As stored: a row written elsewhere may hold any JSON there (a string would
    # otherwise be taken letter by letter for the arguments).
    args = [] if schedule.args is None else schedule.args
    kwargs = {} if schedule.kwargs is None else schedule.kwargs
    if not isinstance(args, list) or not isinstance(kwargs, dict):
        raise InvalidSchedule(
            f"schedule {schedule.name!r}: its stored args must be a list and its kwargs an "
            f"object, got {type(args).__name__} and {type(kwargs).__name__}"
        )
    return job_of_call(task, list(args), dict(kwargs))


def fire_due_schedules(grace: timedelta = MIN_GRACE) -> int:
    """Fire every due schedule's tick; the number of jobs enqueued."""
    now = database.database_now()
    fired = 0
    for schedule in store.due_schedules(now):
        if fire_schedule(schedule, now, grace) is not None:
            fired += 1
    return fired


def fire_schedule(schedule: Schedule, now: datetime, grace: timedelta) -> Job | None:
    """Fire one due schedule's tick (per its policy); the job, or None when there
    was nothing to fire, another worker fired it, or its job cannot be built (the
    reason is kept on the schedule and logged, and the schedule moves on)."""
    try:
        chosen = plan(schedule, now, grace)
    except InvalidSchedule as exc:
        logger.error("Schedule %r cannot compute its ticks: %s", schedule.name, exc)
        store.stop_schedule(schedule.pk, error=str(exc))
        return None
    if chosen.tick is None:
        logger.info(
            "Schedule %r: missed ticks skipped, next at %s.", schedule.name, chosen.next_fire_at
        )
        store.advance_schedule(schedule.pk, chosen.next_fire_at)
        return None
    try:
        job = job_for(schedule)
    except (DispatchJobsError, ValueError, TypeError) as exc:
        message = f"{type(exc).__name__}: {exc}"
        logger.error("Schedule %r could not enqueue %r: %s", schedule.name, schedule.task, message)
        store.advance_schedule(schedule.pk, chosen.next_fire_at, error=message)
        return None
    return store.fire_schedule_tick(schedule, chosen.tick, job, chosen.next_fire_at)


def run_now(schedule: Schedule) -> Job:
    """Enqueue one run of ``schedule`` now, outside its ticks."""
    return store.run_schedule_now(schedule, job_for(schedule))


def sync_declared_schedules() -> store.SyncReport:
    """Import the installed apps' tasks modules (their ``@periodic`` declarations),
    then sync every code-declared schedule into the table."""
    names.autodiscover_tasks()
    report = store.sync_schedules(declared_schedules())
    for name in report.undeclared:
        logger.warning(
            "Schedule %r was declared in code but no longer is; it is left as it is "
            "(delete it in the admin if it is obsolete).",
            name,
        )
    return report
