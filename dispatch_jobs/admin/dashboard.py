"""The dashboard on the app's admin index: jobs by state and by queue,
throughput and failures per minute over the last hour and day, the slowest and
most-failing tasks, the workers alive.

What it costs, whatever the size of the jobs table:

- by state: one bounded probe per state (``SELECT id ... LIMIT threshold+1``
  through the (state, id) index), "10,000+" above the threshold;
- by queue: one bounded probe per known queue through the ready index, and one
  read of the running jobs (bounded by the fleet's concurrency);
- throughput and tasks: two aggregates over the last day of ``TaskMinute``
  rows, which grow with tasks x minutes, never with jobs
  (``store.roll_up_finished_jobs`` writes them from a maintenance runner);
- workers: one read of the small workers table.

All of it runs under the admin statement timeout, and the result is cached
for ``CACHE_SECONDS`` so a wall of browsers refreshing costs one render.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.core.cache import cache
from django.db import connections
from django.db.models import Max, Sum
from django.db.models.functions import Now
from django.utils.timezone import localtime

from .. import store
from ..conf import settings
from ..models import READY_STATES, Job, JobState, TaskMinute, Worker
from ..store import db
from . import charts, display
from .paging import bounded_count
from .queues import known_queues
from .workers import STALE_AFTER_BEATS

CACHE_SECONDS = 5
TOP_TASKS = 5
_CACHE_KEY = "dispatch_jobs:admin:dashboard:{alias}"


@dataclass
class QueueLine:
    name: str
    ready: int | None
    running: int
    paused: bool


@dataclass
class TaskLine:
    name: str
    completed: int
    failed: int
    retried: int
    run_ms_total: int
    run_ms_max: int

    @property
    def finished(self) -> int:
        return self.completed + self.failed

    @property
    def average(self) -> str:
        if not self.finished:
            return display.EMPTY
        return display.duration(self.run_ms_total / self.finished / 1000)

    @property
    def slowest(self) -> str:
        return display.duration(self.run_ms_max / 1000)

    @property
    def failure_rate(self) -> str:
        return f"{100 * self.failed / self.finished:.0f}%" if self.finished else display.EMPTY


@dataclass
class Snapshot:
    now: datetime
    states: list[tuple[str, str, int | None]]  # (value, label, count or None: over)
    queues: list[QueueLine]
    minutes: dict[datetime, tuple[int, int]]  # minute -> (completed, failed), last day
    tasks: list[TaskLine]
    workers_alive: int
    workers_stale: int
    rolled_up_to: datetime | None
    threshold: int


def cached_context() -> dict[str, object]:
    """What the dashboard template shows, from the cache when fresh: the
    numbers and the charts drawn from them, once per ``CACHE_SECONDS``."""
    key = _CACHE_KEY.format(alias=db.alias())
    cached = cache.get(key)
    if isinstance(cached, dict):
        return cached
    fresh = context(_read())
    cache.set(key, fresh, CACHE_SECONDS)
    return fresh


def _read() -> Snapshot:
    threshold = settings.admin_count_threshold
    now = db.database_now()
    states = _state_counts(threshold)
    workers = list(Worker.objects.using(db.alias()).values_list("concurrency", "last_seen_at"))
    stale_after = settings.heartbeat_interval * STALE_AFTER_BEATS
    stale = sum(1 for _, last_seen in workers if now - last_seen > stale_after)
    # Running jobs are at most what the fleet can hold (twice over, for rows
    # whose worker just left): the bound of the one read of them.
    running_bound = sum(max(c, 1) for c, _ in workers) * 2 + 100
    return Snapshot(
        now=now,
        states=states,
        queues=_queues(threshold, running_bound),
        minutes=_minutes(now),
        tasks=_tasks(now),
        workers_alive=len(workers) - stale,
        workers_stale=stale,
        rolled_up_to=store.rollup_watermark(),
        threshold=threshold,
    )


def _state_counts(threshold: int) -> list[tuple[str, str, int | None]]:
    """Every state's bounded count in one statement: a UNION ALL of
    ``COUNT(*)`` over ``SELECT id ... WHERE state = s LIMIT threshold + 1``
    (each served by the (state, id) index), so six probes cost one round trip."""
    connection = connections[db.alias()]
    quote = connection.ops.quote_name
    table, state, key = quote(Job._meta.db_table), quote("state"), quote("id")
    probe = f"SELECT COUNT(*) FROM (SELECT {key} FROM {table} WHERE {state} = %s LIMIT %s) AS p"
    parts: list[str] = []
    params: list[str | int] = []
    for value, _ in JobState.choices:
        parts.append(f"SELECT %s, ({probe})")
        params += [str(value), str(value), threshold + 1]
    with connection.cursor() as cursor:
        cursor.execute(" UNION ALL ".join(parts), params)
        found = {str(value): int(count) for value, count in cursor.fetchall()}
    return [
        (value, label, found[value] if found[value] <= threshold else None)
        for value, label in JobState.choices
    ]


def _queues(threshold: int, running_bound: int) -> list[QueueLine]:
    jobs = Job.objects.using(db.alias())
    paused = store.paused_queues()
    running: dict[str, int] = defaultdict(int)
    running_jobs = jobs.filter(state=JobState.RUNNING).order_by()
    rows = running_jobs.values_list("queue", flat=True)[:running_bound]
    for queue in rows:
        running[queue] += 1
    lines = []
    for name in sorted(set(known_queues()) | set(running)):
        ready = jobs.filter(queue=name, state__in=READY_STATES, run_at__lte=Now())
        lines.append(
            QueueLine(name, bounded_count(ready, threshold), running[name], name in paused)
        )
    return lines


def _minutes(now: datetime) -> dict[datetime, tuple[int, int]]:
    rows = (
        TaskMinute.objects.using(db.alias())
        .filter(minute__gt=now - timedelta(days=1))
        .values("minute")
        .annotate(completed=Sum("completed"), failed=Sum("failed"))
        .order_by()
    )
    return {row["minute"]: (row["completed"], row["failed"]) for row in rows}


def _tasks(now: datetime) -> list[TaskLine]:
    rows = (
        TaskMinute.objects.using(db.alias())
        .filter(minute__gt=now - timedelta(days=1))
        .values("name")
        .annotate(
            completed=Sum("completed"),
            failed=Sum("failed"),
            retried=Sum("retried"),
            run_ms_total=Sum("run_ms_total"),
            run_ms_max=Max("run_ms_max"),
        )
        .order_by()
    )
    return [TaskLine(**row) for row in rows]


# --- What the template shows, derived from a snapshot.


def _series(snap: Snapshot, minutes: int) -> list[charts.Point]:
    end = snap.now.replace(second=0, microsecond=0)
    # Labels in the current time zone, converted once (not per point).
    offset = localtime(end).utcoffset() or timedelta(0)
    points = []
    for back in range(minutes - 1, -1, -1):
        at = end - timedelta(minutes=back)
        completed, failed = snap.minutes.get(at, (0, 0))
        points.append(charts.Point((at + offset).strftime("%H:%M"), completed, failed))
    return points


def context(snap: Snapshot) -> dict[str, object]:
    hour, day = _series(snap, 60), _series(snap, 24 * 60)
    threshold = f"{snap.threshold:,}+"
    return {
        "dashboard": snap,
        "state_counts": [
            (value, label, threshold if count is None else f"{count:,}")
            for value, label, count in snap.states
        ],
        "queue_counts": [
            (q, threshold if q.ready is None else f"{q.ready:,}") for q in snap.queues
        ],
        "hour_chart": charts.bars(hour, "Finished per minute, last hour", "Last hour"),
        "day_chart": charts.lines(day, "Finished per minute, last 24 hours", "Last 24 hours"),
        "hour_totals": _totals(hour),
        "day_totals": _totals(day),
        "slowest": sorted(
            (t for t in snap.tasks if t.finished),
            key=lambda t: (-t.run_ms_total / t.finished, t.name),
        )[:TOP_TASKS],
        "failing": sorted((t for t in snap.tasks if t.failed), key=lambda t: (-t.failed, t.name))[
            :TOP_TASKS
        ],
        "rolled_up_to": display.moment(snap.rolled_up_to),
        "as_of": display.moment(snap.now),
    }


def _totals(points: list[charts.Point]) -> dict[str, str]:
    completed = sum(p.completed for p in points)
    failed = sum(p.failed for p in points)
    rate = (completed + failed) / max(len(points), 1)
    return {"completed": f"{completed:,}", "failed": f"{failed:,}", "per_minute": f"{rate:,.1f}"}
