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
from datetime import UTC, datetime, timedelta
from typing import Any

from django.core.cache import cache
from django.utils.timezone import localtime

from .. import database
from ..conf import settings
from ..models import READY_STATES, Job, JobState, RollupMark, TaskMinute
from ..store import ROLLUP_MARK
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
    key = _CACHE_KEY.format(alias=database.alias())
    cached = cache.get(key)
    if isinstance(cached, dict):
        return cached
    fresh = context(_read())
    cache.set(key, fresh, CACHE_SECONDS)
    return fresh


def _read() -> Snapshot:
    threshold = settings.admin_count_threshold
    now = database.database_now()
    known = fleet(tasks=False)
    stale_after = settings.heartbeat_interval * STALE_AFTER_BEATS
    stale = sum(1 for _, last_seen in known.workers if now - last_seen > stale_after)
    # Running jobs are at most what the fleet can hold (twice over, for rows
    # whose worker just left): the bound of the one read of them.
    running_bound = sum(max(c, 1) for c, _ in known.workers) * 2 + 100
    counts = _job_counts(now, known.queues, threshold, running_bound)
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
    now: datetime, queues: list[str], threshold: int, running_bound: int
) -> dict[tuple[str, str], int]:
    """Every count the dashboard shows of the jobs table, in one statement:
    {("state", state): n, ("ready", queue): n, ("running", queue): n}.

    A UNION ALL of ``COUNT(*)`` over bounded probes (``SELECT id ... LIMIT
    threshold + 1``): one per state through the (state, id) index, one per
    queue through the ready index (ready at ``now``, the clock just read), and
    the running jobs by queue over one read of at most ``running_bound`` rows.
    One round trip, whatever the number of states and queues."""
    connection = database.connection()
    quote = connection.ops.quote_name
    table, key, state = quote(Job._meta.db_table), quote("id"), quote("state")
    queue, run_at = quote("queue"), quote("run_at")
    ready_states = ", ".join(["%s"] * len(READY_STATES))
    by_state = f"SELECT {key} FROM {table} WHERE {state} = %s LIMIT %s"
    ready = (
        f"SELECT {key} FROM {table} WHERE {queue} = %s AND {state} IN ({ready_states}) "
        f"AND {run_at} <= %s LIMIT %s"
    )
    at = connection.ops.adapt_datetimefield_value(now)
    parts: list[str] = []
    params: list[Any] = []
    for value, _ in JobState.choices:
        parts.append(f"SELECT %s, %s, (SELECT COUNT(*) FROM ({by_state}) p)")
        params += ["state", str(value), str(value), threshold + 1]
    for name in queues:
        parts.append(f"SELECT %s, %s, (SELECT COUNT(*) FROM ({ready}) p)")
        params += ["ready", name, name, *map(str, READY_STATES), at, threshold + 1]
    parts.append(
        f"SELECT %s, r.{queue}, COUNT(*) FROM "
        f"(SELECT {queue} FROM {table} WHERE {state} = %s LIMIT %s) r GROUP BY r.{queue}"
    )
    params += ["running", str(JobState.RUNNING), running_bound]
    with connection.cursor() as cursor:
        cursor.execute(" UNION ALL ".join(parts), params)
        return {(kind, key): int(count) for kind, key, count in cursor.fetchall()}


def _rollup(now: datetime) -> tuple[list[int], list[int], list[TaskLine], datetime | None]:
    """The last day's rollup in one statement, a UNION ALL of three parts:
    completed and failed per minute (returned as two lists, oldest minute
    first, the last one the minute of ``now``), totals per task, and the
    rollup's watermark."""
    connection = database.connection()
    quote = connection.ops.quote_name
    buckets, marks = quote(TaskMinute._meta.db_table), quote(RollupMark._meta.db_table)
    minute, name = quote("minute"), quote("name")
    done, failed = f"SUM({quote('completed')})", f"SUM({quote('failed')})"
    retried, run_ms = f"SUM({quote('retried')})", f"SUM({quote('run_ms_total')})"
    slowest = f"MAX({quote('run_ms_max')})"
    end = now.replace(second=0, microsecond=0)
    first = connection.ops.adapt_datetimefield_value(end - (DAY_MINUTES - 1) * _MINUTE)
    sql = (
        f"SELECT %s, {minute}, %s, {done}, {failed}, 0, 0, 0 FROM {buckets} "
        f"WHERE {minute} >= %s GROUP BY {minute} "
        f"UNION ALL SELECT %s, NULL, {name}, {done}, {failed}, {retried}, {run_ms}, {slowest} "
        f"FROM {buckets} WHERE {minute} >= %s GROUP BY {name} "
        f"UNION ALL SELECT %s, {quote('completed_at')}, %s, 0, 0, 0, 0, 0 FROM {marks} "
        f"WHERE {name} = %s"
    )
    params = ["minute", "", first, "task", first, "mark", "", ROLLUP_MARK]
    completed, failures = [0] * DAY_MINUTES, [0] * DAY_MINUTES
    tasks: list[TaskLine] = []
    rolled_up_to = None
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    for kind, at, task, *numbers in rows:
        if kind == "task":
            tasks.append(TaskLine(task, *map(int, numbers)))
        elif at is None:
            continue  # the rollup has not run yet
        elif kind == "minute":
            index = DAY_MINUTES - 1 - (end - _utc(at)) // _MINUTE
            if 0 <= index < DAY_MINUTES:
                completed[index], failures[index] = int(numbers[0]), int(numbers[1])
        else:
            rolled_up_to = _utc(at)
    return completed, failures, tasks, rolled_up_to


def _utc(value: datetime | str) -> datetime:
    """A timestamp as the driver returns it (aware on PostgreSQL, naive UTC on
    MariaDB, text on SQLite) as an aware UTC datetime."""
    parsed = datetime.fromisoformat(value) if isinstance(value, str) else value
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


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
