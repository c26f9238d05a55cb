"""The rollup of finished jobs into ``TaskMinute`` buckets (the dashboard's
source), incremental from a watermark.

Each batch reads the next finished jobs after the watermark, in
``(completed_at, id)`` order through the ``dj_job_completed_id`` index, adds
them to their buckets and moves the watermark, in one transaction that holds
the watermark row's lock: a second leader racing this one waits for the lock,
then reads the moved watermark, so no job is counted twice (and none is lost:
a failed batch rolls back its counts with its watermark).

Jobs finished in the last ``LAG`` are left for the next run: ``completed_at``
is the database's clock at the completing statement, and a completion
committed a moment later must not land behind a watermark that has passed it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.db.models import Q, QuerySet

from ..models import Job, JobState, RollupMark, TaskMinute
from . import db

MARK = "task_minutes"
LAG = timedelta(seconds=10)
BATCH = 2_000
MAX_BATCHES = 20  # per call, so one backlog cannot hold the leader for long
# Buckets older than this are removed (the dashboard shows the last day).
RETENTION = timedelta(days=8)


@dataclass
class _Bucket:
    completed: int = 0
    failed: int = 0
    cancelled: int = 0
    retried: int = 0
    run_ms_total: int = 0
    run_ms_max: int = 0

    def add(self, state: str, retries: int, run_ms: int | None) -> None:
        if state == JobState.COMPLETED:
            self.completed += 1
        elif state == JobState.FAILED:
            self.failed += 1
        else:
            self.cancelled += 1
        self.retried += retries
        if run_ms is not None:
            self.run_ms_total += run_ms
            self.run_ms_max = max(self.run_ms_max, run_ms)


_Key = tuple[datetime, str, str]  # (minute, task name, queue)
_Row = tuple[int, str, str, str, int, datetime | None, datetime | None]


def roll_up_finished_jobs(
    *, batch: int = BATCH, max_batches: int = MAX_BATCHES, lag: timedelta = LAG
) -> int:
    """Add the jobs finished since the watermark (and at least ``lag`` ago) to
    their minute buckets, at most ``batch`` per transaction and ``max_batches``
    batches; then drop buckets past ``RETENTION``. Returns how many jobs were
    rolled up."""
    _ensure_mark()
    total = 0
    for _ in range(max_batches):
        done = _roll_up_batch(batch, lag)
        total += done
        if done < batch:
            break
    _purge_buckets(batch)
    return total


def rollup_watermark() -> datetime | None:
    """The finish time the rollup has counted up to (None before its first run)."""
    return (
        RollupMark.objects.using(db.alias())
        .filter(name=MARK)
        .values_list("completed_at", flat=True)
        .first()
    )


def _ensure_mark() -> None:
    marks = RollupMark.objects.using(db.alias())
    if marks.filter(name=MARK).exists():
        return
    try:
        with transaction.atomic(using=db.alias()):
            marks.create(name=MARK)
    except IntegrityError:
        pass  # another leader created it first


def _after(mark: RollupMark, lag: timedelta) -> QuerySet[Job]:
    finished = Job.objects.using(db.alias()).filter(
        completed_at__isnull=False, completed_at__lte=db.now_minus(lag)
    )
    if mark.completed_at is None:
        return finished
    # "at >= t AND (at > t OR id > n)": a range on the index's leading column.
    return finished.filter(
        Q(completed_at__gte=mark.completed_at)
        & (Q(completed_at__gt=mark.completed_at) | Q(id__gt=mark.job_id))
    )


def _roll_up_batch(batch: int, lag: timedelta) -> int:
    alias = db.alias()
    with transaction.atomic(using=alias):
        # The lock that serialises rollups; re-read after any wait.
        mark = RollupMark.objects.using(alias).select_for_update().get(name=MARK)
        rows: list[_Row] = list(
            _after(mark, lag)
            .order_by("completed_at", "id")
            .values_list(
                "id", "name", "queue", "state", "retry_count", "started_at", "completed_at"
            )[:batch]
        )
        if not rows:
            return 0
        _add(_buckets(rows))
        last_id, *_, last_at = rows[-1]
        RollupMark.objects.using(alias).filter(name=MARK).update(
            completed_at=last_at, job_id=last_id, updated_at=db.now_plus(timedelta(0))
        )
    return len(rows)


def _buckets(rows: list[_Row]) -> dict[_Key, _Bucket]:
    buckets: dict[_Key, _Bucket] = {}
    for _id, name, queue, state, retries, started, finished in rows:
        if finished is None:  # excluded by the query; here for the type checker
            continue
        minute = finished.replace(second=0, microsecond=0)
        run_ms = None
        if started is not None:
            run_ms = max(0, (finished - started) // timedelta(milliseconds=1))
        buckets.setdefault((minute, name, queue), _Bucket()).add(state, retries, run_ms)
    return buckets


def _add(buckets: dict[_Key, _Bucket]) -> None:
    """Add to existing rows, create the rest. Safe without an upsert: only the
    holder of the watermark lock writes buckets."""
    rows = TaskMinute.objects.using(db.alias())
    minutes = [key[0] for key in buckets]
    existing = {
        (row.minute, row.name, row.queue): row
        for row in rows.filter(
            minute__gte=min(minutes),
            minute__lte=max(minutes),
            name__in={key[1] for key in buckets},
        )
    }
    changed, created = [], []
    for key, bucket in buckets.items():
        row = existing.get(key)
        if row is None:
            created.append(TaskMinute(minute=key[0], name=key[1], queue=key[2], **vars(bucket)))
            continue
        row.completed += bucket.completed
        row.failed += bucket.failed
        row.cancelled += bucket.cancelled
        row.retried += bucket.retried
        row.run_ms_total += bucket.run_ms_total
        row.run_ms_max = max(row.run_ms_max, bucket.run_ms_max)
        changed.append(row)
    if created:
        rows.bulk_create(created)
    if changed:
        rows.bulk_update(changed, [*vars(_Bucket()).keys()])


def _purge_buckets(limit: int) -> int:
    rows = TaskMinute.objects.using(db.alias())
    ids = list(
        rows.filter(minute__lt=db.now_minus(RETENTION))
        .order_by("minute")
        .values_list("id", flat=True)[:limit]
    )
    if not ids:
        return 0
    deleted, _ = rows.filter(id__in=ids).delete()
    return deleted
