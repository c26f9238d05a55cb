"""The loop the schedule race runs in threads and child processes."""

from __future__ import annotations

import time
from datetime import datetime

from django.db import connection

from dispatch_jobs import scheduler, store
from dispatch_jobs.models import Schedule


def fire_loop(schedule_id: int, ticks: list[str], deadline: float) -> list[str]:
    """Fire each tick (ISO text) once, in order, through ``store.fire_schedule_tick``
    with a fresh job each time; the ticks whose job this caller enqueued."""
    fired: list[str] = []
    try:
        row = Schedule.objects.get(pk=schedule_id)
        moments = [datetime.fromisoformat(text) for text in ticks]
        for tick, following in zip(moments, [*moments[1:], moments[-1]], strict=True):
            if time.monotonic() > deadline:
                break
            if store.fire_schedule_tick(row, tick, scheduler.job_for(row), following):
                fired.append(tick.isoformat())
        return fired
    finally:
        connection.close()
