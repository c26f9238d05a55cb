"""The child processes of the schedule race: each fires the same ticks of one
schedule through the store, as racing maintenance leaders would.

Imports nothing of Django's at import time (see ``_procs``)."""

from __future__ import annotations

from collections.abc import Callable
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event
from typing import Any

from tests.store._procs import _run_released


def fire_ticks(
    db_name: str, worker_id: str, schedule_id: int, ready: Queue, go: Event, results: Queue
) -> None:
    """Fire the schedule's ticks in order; report the ticks this process won."""

    def prepare() -> Callable[[float], list[Any]]:
        from functools import partial

        from dispatch_jobs.models import Schedule
        from tests.store.schedule_race import fire_loop, ticks_of

        # Read before saying ready: no racer fires before every one has its ticks.
        return partial(fire_loop, schedule_id, ticks_of(Schedule.objects.get(pk=schedule_id)))

    _run_released(db_name, worker_id, ready, go, results, prepare)
