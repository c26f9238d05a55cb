"""The fleet's gauges, read from the database on each scrape (a custom Collector).

What it costs per scrape, whatever the size of the jobs table:

- per known queue and ready state (pending, retrying): one read of at most
  ``METRICS_COUNT_CAP`` rows (default 10,000) in the claim's own index order
  (``dj_job_ready``; ``dj_job_ready_my`` on MariaDB), aggregated by the
  database: ``SELECT COUNT(*), MIN(run_at) FROM (... LIMIT cap)``. A depth at
  the cap means "at least the cap". Each state is its own query so that on
  MariaDB, whose index starts with the state, each is one index range read in
  order. The index also holds jobs scheduled for later; where a queue has many
  of those at a priority above its ready jobs, the read steps over them, as
  the claim itself does;
- one read of the worker rows (a small table) and one of the paused queues;
- on PostgreSQL, all of it under a statement timeout (``STATEMENT_TIMEOUT``),
  so a scrape never pins the database. A failed or cancelled scrape reports
  ``dispatch_jobs_fleet_up 0`` and no other fleet gauge, never an error page.

The oldest-ready age is exact when a queue's ready jobs are fewer than the cap
or share one priority (the usual case: tasks default to priority 0). Past the
cap with mixed priorities it is the oldest among the next ``cap`` jobs workers
will claim, a lower bound.

Known queues: ``default``, each dispatch_jobs backend's ``QUEUES`` in
``TASKS``, the queues live workers serve, and queues with a pause row (the
admin's queues view lists the same set).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import DatabaseError
from django.db.models import Count, Min
from django.db.models.functions import Now

from .. import database, store
from ..conf import declared_queues, settings
from ..models import READY_STATES
from ..store import reads
from ..validation import live_window
from . import prometheus_client

logger = logging.getLogger("dispatch_jobs.metrics")

STATEMENT_TIMEOUT = timedelta(seconds=5)


@dataclass(frozen=True)
class QueueBacklog:
    ready: int  # capped
    oldest_ready_age: float | None  # seconds; None when nothing is ready


@dataclass(frozen=True)
class FleetSnapshot:
    queues: dict[str, QueueBacklog]
    paused: set[str]
    workers: dict[str, int]  # live workers by state


def read_fleet(cap: int) -> FleetSnapshot:
    """Everything the gauges show, by the bounded queries of the module docstring."""
    with store.statement_timeout(STATEMENT_TIMEOUT):
        since = live_window()
        live = reads.workers().filter(last_seen_at__gte=database.now_minus(since))
        rows = list(live.values_list("state", "queues"))
        paused = store.paused_queues()
        names = _known_queues(rows, paused)
        now = database.database_now()
        queues = {name: _backlog(name, cap, now) for name in sorted(names)}
    workers: dict[str, int] = {}
    for state, _queues in rows:
        workers[state] = workers.get(state, 0) + 1
    return FleetSnapshot(queues, paused, workers)


def _known_queues(worker_rows: list[tuple[str, Any]], paused: set[str]) -> set[str]:
    names = {*declared_queues(), *paused}
    for _state, served in worker_rows:
        if isinstance(served, list):
            names.update(str(q) for q in served)
    return names


def _backlog(queue: str, cap: int, now: datetime) -> QueueBacklog:
    ready = 0
    oldest: datetime | None = None
    for state in READY_STATES:
        count, first = _capped_ready(queue, str(state), cap)
        ready += count
        if first is not None and (oldest is None or first < oldest):
            oldest = first
    age = max((now - oldest).total_seconds(), 0.0) if oldest is not None else None
    return QueueBacklog(min(ready, cap), age)


def _capped_ready(queue: str, state: str, cap: int) -> tuple[int, datetime | None]:
    """(ready jobs up to ``cap``, the earliest run_at among them) of one state:
    Django aggregates a sliced queryset over it as a subquery, so the database
    reads at most ``cap`` index entries that match."""
    window = (
        reads.jobs()
        .filter(queue=queue, state=state, run_at__lte=Now())
        .order_by("-priority", "run_at", "id")[:cap]  # the ready index's order
    )
    found = window.aggregate(count=Count("*"), first=Min("run_at"))
    return int(found["count"]), found["first"]


class FleetCollector:
    """A prometheus-client Collector of the fleet's gauges, read on each scrape.

    ``enabled``: asked on each scrape; when false nothing is read or reported
    (a worker reports the fleet only while it runs maintenance, so across a
    fleet of workers each gauge comes from one of them). ``close_connection``:
    close this thread's database connection after the scrape (the worker's
    exposition server answers each scrape on a new thread).
    """

    def __init__(
        self, enabled: Callable[[], bool] = lambda: True, *, close_connection: bool = False
    ) -> None:
        self.enabled = enabled
        self.close_connection = close_connection

    def describe(self) -> list[Any]:
        # Empty: registering must not query the database (the registry would
        # otherwise call collect() to learn the names).
        return []

    def collect(self) -> Iterator[Any]:
        if not self.enabled():
            return
        client = prometheus_client("The dispatch_jobs fleet metrics")
        from prometheus_client.core import GaugeMetricFamily

        cap = settings.metrics_count_cap
        started = time.perf_counter()
        try:
            snapshot = read_fleet(cap)
        except DatabaseError:
            logger.warning("Fleet metrics: the database query failed.", exc_info=True)
            snapshot = None
        finally:
            if self.close_connection:
                database.connection().close()
        up = GaugeMetricFamily(
            "dispatch_jobs_fleet_up", "1 when the fleet gauges were read from the database."
        )
        up.add_metric([], 1.0 if snapshot is not None else 0.0)
        yield up
        if snapshot is None:
            return
        yield from _families(client, GaugeMetricFamily, snapshot, cap)
        took = GaugeMetricFamily(
            "dispatch_jobs_fleet_scrape_duration_seconds",
            "Time spent reading the fleet gauges from the database.",
        )
        took.add_metric([], time.perf_counter() - started)
        yield took


def _families(client: Any, gauge: Any, snapshot: FleetSnapshot, cap: int) -> Iterator[Any]:
    ready = gauge(
        "dispatch_jobs_queue_ready_jobs",
        f"Jobs ready to run now (pending or retrying, due), counted up to "
        f"dispatch_jobs_queue_count_cap ({cap}).",
        labels=["queue"],
    )
    oldest = gauge(
        "dispatch_jobs_queue_oldest_ready_age_seconds",
        "How long the longest-waiting ready job of the queue has been due (0: none ready).",
        labels=["queue"],
    )
    paused = gauge("dispatch_jobs_queue_paused", "1 while the queue is paused.", labels=["queue"])
    for name, backlog in snapshot.queues.items():
        ready.add_metric([name], backlog.ready)
        oldest.add_metric([name], backlog.oldest_ready_age or 0.0)
        paused.add_metric([name], 1.0 if name in snapshot.paused else 0.0)
    capped = gauge("dispatch_jobs_queue_count_cap", "The cap on dispatch_jobs_queue_ready_jobs.")
    capped.add_metric([], cap)
    workers = gauge(
        "dispatch_jobs_workers_live",
        "Worker processes seen within WORKER_STALE_AFTER, by state.",
        labels=["state"],
    )
    for state in ("active", "draining"):
        workers.add_metric([state], snapshot.workers.get(state, 0))
    yield from (ready, oldest, paused, capped, workers)
