"""The loop the schedule race runs in threads and child processes."""

from __future__ import annotations

import time

from django.db import connection

from dispatch_jobs import scheduler, store
from dispatch_jobs.models import Schedule
from dispatch_jobs.ticks import next_tick

TICKS = 100


def ticks_of(row: Schedule, count: int = TICKS) -> list:
    """The schedule's ``count`` ticks from its next fire on."""
    tick = row.next_fire_at
    found = []
    for _ in range(count):
        found.append(tick)
        tick = next_tick(row.cron, row.interval, row.timezone, tick)
    return found


def fire_loop(schedule_id: int, moments: list, deadline: float) -> list[str]:
    """Fire each of ``moments`` (the schedule's ticks, read by the test before any
    racer starts: a late racer must race for the same ticks, not the ones after
    those already fired) once, in order, through ``store.fire_schedule_tick`` with a
    fresh job each time; the ticks (ISO text) whose job this caller enqueued."""
    fired: list[str] = []
    try:
        row = Schedule.objects.get(pk=schedule_id)
        for tick, following in zip(moments, [*moments[1:], moments[-1]], strict=True):
            if time.monotonic() > deadline:
                break
            if store.fire_schedule_tick(row, tick, scheduler.job_for(row), following):
                fired.append(tick.isoformat())
        return fired
    finally:
        connection.close()
