"""The dashboard on the app's admin index: jobs by state and by queue,
throughput and failures per minute over the last hour and day, the slowest and
most-failing tasks, the workers alive.

What it costs, whatever the size of the jobs table: four statements, however
many jobs, tasks or queues there are.

- the database's clock;
- the small tables (``queues.fleet``): known and paused queues, workers;
- every count of jobs in one UNION ALL: one bounded probe per state
  (``SELECT id ... LIMIT threshold+1`` through the (state, id) index,
  "10,000+" above the threshold), one per known queue through the ready index,
  and the running jobs by queue (a read bounded by the fleet's concurrency);
- the rollup in one UNION ALL: the last day of ``TaskMinute`` rows summed per
  minute and per task, and the rollup's watermark. Those rows grow with tasks x
  minutes, never with jobs (``store.roll_up_finished_jobs`` writes them from a
  maintenance runner).

All of it runs under the admin statement timeout, and the result is cached
for ``CACHE_SECONDS`` so a wall of browsers refreshing costs one render.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.core.cache import cache
from django.db import connections
from django.db.models import (
    BigIntegerField,
    CharField,
    DateTimeField,
    F,
    Max,
    QuerySet,
    Sum,
    Value,
)
from django.db.models.functions import Now
from django.utils.timezone import localtime

from ..conf import settings
from ..models import READY_STATES, Job, JobState, TaskMinute
from ..store import db
from ..store.rollup import rollup_mark
from . import charts, display
from .queues import fleet
from .workers import STALE_AFTER_BEATS

CACHE_SECONDS = 5
TOP_TASKS = 5
DAY_MINUTES = 24 * 60
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
    # Finished per minute over the last day, oldest first, the last entry the
    # minute of ``now``: completed and failed.
    completed: list[int]
    failed: list[int]
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
    known = fleet()
    stale_after = settings.heartbeat_interval * STALE_AFTER_BEATS
    stale = sum(1 for _, last_seen in known.workers if now - last_seen > stale_after)
    # Running jobs are at most what the fleet can hold (twice over, for rows
    # whose worker just left): the bound of the one read of them.
    running_bound = sum(max(c, 1) for c, _ in known.workers) * 2 + 100
    counts = _job_counts(known.queues, threshold, running_bound)
    states = [
        (str(value), label, _capped(counts.get(("state", str(value)), 0), threshold))
        for value, label in JobState.choices
    ]
    queue_names = sorted(set(known.queues) | {q for kind, q in counts if kind == "running"})
    queues = [
        QueueLine(
            name,
            _capped(counts.get(("ready", name), 0), threshold),
            counts.get(("running", name), 0),
            name in known.paused,
        )
        for name in queue_names
    ]
    completed, failed, tasks, rolled_up_to = _rollup(now)
    return Snapshot(
        now=now,
        states=states,
        queues=queues,
        completed=completed,
        failed=failed,
        tasks=tasks,
        workers_alive=len(known.workers) - stale,
        workers_stale=stale,
        rolled_up_to=rolled_up_to,
        threshold=threshold,
    )


def _capped(count: int, threshold: int) -> int | None:
    return count if count <= threshold else None


def _job_counts(
    queues: list[str], threshold: int, running_bound: int
) -> dict[tuple[str, str], int]:
    """Every count the dashboard shows of the jobs table, in one statement:
    {("state", state): n, ("ready", queue): n, ("running", queue): n}.

    A UNION ALL of ``COUNT(*)`` over each bounded probe (``SELECT id ... LIMIT
    threshold + 1``, each served by an index), and the running jobs by queue
    over one read of at most ``running_bound`` rows: one round trip, whatever
    the number of states and queues."""
    alias = db.alias()
    connection = connections[alias]
    jobs = Job.objects.using(alias).order_by()
    probes: list[tuple[str, str, QuerySet[Job]]] = [
        ("state", str(value), jobs.filter(state=value)) for value, _ in JobState.choices
    ]
    probes += [
        ("ready", name, jobs.filter(queue=name, state__in=READY_STATES, run_at__lte=Now()))
        for name in queues
    ]
    parts: list[str] = []
    params: list[Any] = []
    for kind, key, probe in probes:
        sql, probe_params = _compiled(probe.values("pk")[: threshold + 1])
        parts.append(f"SELECT %s, %s, (SELECT COUNT(*) FROM ({sql}) p)")
        params += [kind, key, *probe_params]
    running = jobs.filter(state=JobState.RUNNING).values("queue")[:running_bound]
    sql, running_params = _compiled(running)
    queue = connection.ops.quote_name("queue")
    parts.append(f"SELECT %s, r.{queue}, COUNT(*) FROM ({sql}) r GROUP BY r.{queue}")
    params += ["running", *running_params]
    with connection.cursor() as cursor:
        cursor.execute(" UNION ALL ".join(parts), params)
        return {(kind, key): int(count) for kind, key, count in cursor.fetchall()}


def _compiled(queryset: QuerySet[Any]) -> tuple[str, tuple[Any, ...]]:
    """A queryset's SQL and parameters, to nest in a hand-written statement."""
    return queryset.query.get_compiler(using=queryset.db).as_sql()


def _rollup(now: datetime) -> tuple[list[int], list[int], list[TaskLine], datetime | None]:
    """The last day's rollup in one statement, a UNION ALL of three parts:
    completed and failed per minute (returned as two lists, oldest minute
    first, the last one the minute of ``now``), totals per task, and the
    rollup's watermark. Every column of each part is an annotation, in the same
    order, so the parts line up."""
    end = now.replace(second=0, microsecond=0)
    first = end - timedelta(minutes=DAY_MINUTES - 1)
    buckets = TaskMinute.objects.using(db.alias()).filter(minute__gte=first).order_by()
    text, when = CharField(), DateTimeField()
    zero = Value(0, output_field=BigIntegerField())
    columns = ("kind", "at", "task", "done", "failures", "retries", "ms_total", "ms_max")
    per_minute = (
        buckets.values("minute")
        .annotate(
            kind=Value("minute", output_field=text),
            at=Max("minute"),
            task=Value("", output_field=text),
            done=Sum("completed"),
            failures=Sum("failed"),
            retries=zero,
            ms_total=zero,
            ms_max=zero,
        )
        .values_list(*columns)
    )
    per_task = (
        buckets.values("name")
        .annotate(
            kind=Value("task", output_field=text),
            at=Value(None, output_field=when),
            task=Max("name"),
            done=Sum("completed"),
            failures=Sum("failed"),
            retries=Sum("retried"),
            ms_total=Sum("run_ms_total"),
            ms_max=Max("run_ms_max"),
        )
        .values_list(*columns)
    )
    mark = (
        rollup_mark()
        .annotate(
            kind=Value("mark", output_field=text),
            at=F("completed_at"),
            task=Value("", output_field=text),
            done=zero,
            failures=zero,
            retries=zero,
            ms_total=zero,
            ms_max=zero,
        )
        .values_list(*columns)
    )
    completed, failed = [0] * DAY_MINUTES, [0] * DAY_MINUTES
    tasks: list[TaskLine] = []
    rolled_up_to = None
    for kind, at, task, done, failures, retries, ms_total, ms_max in per_minute.union(
        per_task, mark, all=True
    ):
        if kind == "minute":
            index = DAY_MINUTES - 1 - (end - at) // _MINUTE
            if 0 <= index < DAY_MINUTES:
                completed[index], failed[index] = int(done), int(failures)
        elif kind == "task":
            tasks.append(TaskLine(task, int(done), int(failures), int(retries), ms_total, ms_max))
        else:
            rolled_up_to = at
    return completed, failed, tasks, rolled_up_to


_MINUTE = timedelta(minutes=1)


# --- What the template shows, derived from a snapshot.


def _hour(snap: Snapshot) -> list[charts.Point]:
    """The last 60 minutes as labelled points (a bar each, with its tooltip)."""
    end = snap.now.replace(second=0, microsecond=0)
    return [
        charts.Point(
            _label(end - (DAY_MINUTES - 1 - i) * _MINUTE), snap.completed[i], snap.failed[i]
        )
        for i in range(DAY_MINUTES - 60, DAY_MINUTES)
    ]


def _label(at: datetime) -> str:
    return localtime(at).strftime("%H:%M")


def context(snap: Snapshot) -> dict[str, object]:
    hour = _hour(snap)
    end = snap.now.replace(second=0, microsecond=0)
    day_span = (_label(end - (DAY_MINUTES - 1) * _MINUTE), _label(end))
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
        "day_chart": charts.lines(
            snap.completed,
            snap.failed,
            day_span,
            "Finished per minute, last 24 hours",
            "Last 24 hours",
        ),
        "hour_totals": _totals(snap.completed[-60:], snap.failed[-60:]),
        "day_totals": _totals(snap.completed, snap.failed),
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


def _totals(completed: list[int], failed: list[int]) -> dict[str, str]:
    done, failures = sum(completed), sum(failed)
    rate = (done + failures) / max(len(completed), 1)
    return {"completed": f"{done:,}", "failed": f"{failures:,}", "per_minute": f"{rate:,.1f}"}
