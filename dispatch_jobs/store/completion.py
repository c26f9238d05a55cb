"""Completion: the worker's fenced outcome writes, batched, with each written
attempt's usage row; and the purge of finished jobs past their retention.

A completion is a fenced write like ``update_leased_job`` (running, held by this
worker, at this epoch; never the lease-owned columns), narrowed to the columns
an attempt's outcome changes (``OUTCOME_COLUMNS``: what ``worker.outcomes.settle``
sets), with the times that decide readiness taken from the database's clock: a
retry's ``run_at`` is database-now plus the backoff, so worker clock skew cannot
make a retry run early or late.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Q, QuerySet
from django.db.models.functions import Now

from ..models import FINISHED_STATES, Job, JobState, Usage
from . import db
from .leases import _held


@dataclass(frozen=True)
class Spent:
    """What one attempt cost, as measured by whoever ran it: its usage row, minus
    what the job row already says (name, queue, status, resources, scope ...)."""

    wall_time: timedelta
    cpu_time: timedelta | None
    executor: str


@dataclass(frozen=True)
class Completion:
    """One attempt's outcome to persist: ``job`` carries the new column values
    (state, attempts, last_error, return_value ...); ``epoch`` is the lease it was
    run under; ``retry_in`` (state retrying only) is the backoff from database-now;
    ``spent``, when given, becomes the attempt's usage row, written with the
    outcome or not at all."""

    job: Job
    epoch: int
    retry_in: timedelta | None = None
    spent: Spent | None = None


def complete_leased_jobs(worker_id: str, completions: Sequence[Completion]) -> set[int]:
    """Write many outcomes in one transaction, each behind its own fence, and a
    usage row for each written one that carries ``spent``.

    Returns the ids whose lease was lost (or whose row is gone): those rows are
    untouched, no usage is recorded for them, and the caller discards their
    outcome. One transaction for the batch is one commit (and on SQLite one
    write lock) instead of one per job; the usage rows share it, so an attempt
    is measured exactly when its outcome is stored.
    """
    if not completions:
        return set()
    ordered = sorted(completions, key=lambda c: c.job.pk)
    if db.vendor() == "postgresql":
        return _complete_in_one_statement(worker_id, ordered)
    return _complete_row_by_row(worker_id, ordered)


def usage_of(job: Job, spent: Spent, worker_id: str) -> Usage:
    """The usage row of the attempt that left ``job`` as it is now."""
    return Usage(
        job_id=job.pk,
        name=job.name,
        queue=job.queue,
        attempt=len(job.attempts or []),
        status=job.state,
        input_bytes=job.input_bytes,
        resources=job.resources or {},
        wall_time=spent.wall_time,
        cpu_time=spent.cpu_time,
        executor=spent.executor,
        scope_app_id=job.scope_app_id,
        scope_org_id=job.scope_org_id,
        worker_id=worker_id,
    )


def _complete_row_by_row(worker_id: str, ordered: Sequence[Completion]) -> set[int]:
    """SQLite and MariaDB: one fenced UPDATE per job, in one transaction."""
    lost: set[int] = set()
    with transaction.atomic(using=db.alias()):
        # Lock the rows first, in id order: a heartbeat renewing some of the same
        # leases then waits for this batch instead of deadlocking with it.
        list(
            _jobs()
            .filter(id__in=[c.job.pk for c in ordered])
            .order_by("id")
            .select_for_update()
            .values_list("id", flat=True)
        )
        for completion in ordered:
            job = completion.job
            written = _held(job.pk, worker_id, completion.epoch).update(
                **_fenced_values(completion)
            )
            if not written:
                lost.add(job.pk)
        usages = [
            usage_of(c.job, c.spent, worker_id)
            for c in ordered
            if c.spent is not None and c.job.pk not in lost
        ]
        if usages:
            Usage.objects.using(db.alias()).bulk_create(usages)
    return lost


def _complete_in_one_statement(worker_id: str, ordered: Sequence[Completion]) -> set[int]:
    """PostgreSQL: the whole batch as ONE statement (one round trip, one commit),
    usage rows included.

    The outcomes travel as one JSON parameter unpacked by ``jsonb_to_recordset``,
    so the statement text is the same for every batch (parsed once by the
    driver, whatever the batch size). The CTE locks the batch's rows in id order
    before anything is written, the order ``renew_leases`` and ``release_leases``
    lock in, so a concurrent renewal waits for this batch instead of
    deadlocking with it. Each row's fence (running, this worker, its epoch) is
    tested on the locked row version: a lease moved on meanwhile leaves its row
    untouched, its id unreturned and its usage unwritten.
    """
    connection = connections[db.alias()]
    rows = json.dumps([_json_row(c) for c in ordered])
    ids = [c.job.pk for c in ordered]
    sql = _BATCH_SQL.get(connection.alias) or _BATCH_SQL.setdefault(
        connection.alias, _batch_sql(connection)
    )
    params: list[Any] = [ids, rows, worker_id, str(JobState.RUNNING), worker_id]
    # In autocommit the one statement is atomic on its own. Inside a caller's
    # transaction it gets a savepoint, so a refused batch can be split and
    # written apart without aborting the caller's transaction.
    guard = transaction.atomic(using=connection.alias) if connection.in_atomic_block else None
    with guard or contextlib.nullcontext(), connection.cursor() as cursor:
        cursor.execute(sql, params)
        written = {row[0] for row in cursor.fetchall()}
    return set(ids) - written


# What an attempt's outcome changes on the row and the job carries: what
# ``worker.outcomes.settle`` sets, but for the two times that decide readiness
# and retention, which come from the database's clock (``completed_at`` when the
# job finishes, ``run_at`` when it will retry). Nothing else is sent: the rest
# of the row is as claimed.
OUTCOME_COLUMNS = (
    "state",
    "retry_count",
    "last_error",
    "attempts",
    "return_value",
    "quarantine",  # an outcome written clears suspicion: the job did not kill its worker
)


# The batch statement by database alias: built once, the same text every batch.
_BATCH_SQL: dict[str, str] = {}


def _batch_sql(connection: BaseDatabaseWrapper) -> str:
    quote = connection.ops.quote_name
    table = quote(Job._meta.db_table)
    assignments = [f"{quote(c)} = v.{quote(c)}" for c in OUTCOME_COLUMNS]
    assignments += [
        f"{quote('updated_at')} = STATEMENT_TIMESTAMP()",
        # Database-now for finished jobs, as Now() does in the row-by-row path.
        f"{quote('completed_at')} = CASE WHEN v._finished THEN STATEMENT_TIMESTAMP() "
        f"ELSE job.{quote('completed_at')} END",
        # A retry becomes ready at database-now + backoff: no worker clock involved.
        f"{quote('run_at')} = CASE WHEN v._retry_in IS NULL THEN job.{quote('run_at')} "
        "ELSE STATEMENT_TIMESTAMP() + v._retry_in END",
    ]
    types = ["_id bigint", "_epoch integer", "_finished boolean", "_retry_in interval"]
    types += ["_wall interval", "_cpu interval", "_executor text"]
    fields = {f.attname: f for f in Job._meta.concrete_fields}
    for column in OUTCOME_COLUMNS:
        types.append(f"{quote(column)} {fields[column].cast_db_type(connection)}")
    # The fence is checked on the rows the CTE locked (PostgreSQL hands FOR
    # UPDATE the latest version, re-read after any lock wait, and nobody can
    # change it before this statement commits), not on the table in the
    # UPDATE's WHERE: there the planner may pick the worker_id index to test the
    # fence and read every row this worker ever ran, growing with the table.
    # Here the only predicate on the table is its key.
    return (
        "WITH locked AS MATERIALIZED (SELECT id, lease_epoch, worker_id, state "
        f"FROM {table} WHERE id = ANY(%s) ORDER BY id FOR UPDATE), "
        f"done AS (UPDATE {table} AS job SET {', '.join(assignments)} "
        f"FROM locked JOIN jsonb_to_recordset(%s::jsonb) AS v({', '.join(types)}) "
        "ON v._id = locked.id "
        "WHERE job.id = locked.id AND locked.lease_epoch = v._epoch "
        "AND locked.worker_id = %s AND locked.state = %s "
        "RETURNING job.*, v._wall, v._cpu, v._executor), "
        f"{_usage_insert(connection)} "
        "SELECT id FROM done"
    )


def _usage_insert(connection: BaseDatabaseWrapper) -> str:
    """The CTE that writes a usage row for each written completion that was
    measured (``_wall`` set), its columns taken from the row as written."""
    quote = connection.ops.quote_name
    from_job = {
        "job_id": "id",
        "name": "name",
        "queue": "queue",
        "attempt": "COALESCE(jsonb_array_length(attempts), 0)",
        "status": "state",
        "input_bytes": "input_bytes",
        "resources": "resources",
        "scope_app_id": "scope_app_id",
        "scope_org_id": "scope_org_id",
    }
    values = {**from_job, "wall_time": "_wall", "cpu_time": "_cpu", "executor": "_executor"}
    values.update(peak_rss="0", disk_written="0", worker_id="%s")
    values["recorded_at"] = "STATEMENT_TIMESTAMP()"
    columns = {f.name: str(f.column) for f in Usage._meta.concrete_fields}
    names = ", ".join(quote(columns[name]) for name in values)
    return (
        f"spent AS (INSERT INTO {quote(Usage._meta.db_table)} ({names}) "
        f"SELECT {', '.join(values.values())} FROM done WHERE _wall IS NOT NULL)"
    )


def _json_row(completion: Completion) -> dict[str, object]:
    """One outcome as a JSON object the recordset reads back column by column:
    JSON columns nested as they are, durations as interval text, the rest as
    JSON scalars (JSON null is SQL NULL, as ``update`` writes for None)."""
    job = completion.job
    retry_in = (completion.retry_in or timedelta(0)) if job.state == JobState.RETRYING else None
    spent = completion.spent
    row: dict[str, object] = {
        "_id": job.pk,
        "_epoch": completion.epoch,
        "_finished": job.state in FINISHED_STATES,
        "_retry_in": _interval(retry_in),
        "_wall": _interval(spent.wall_time) if spent else None,
        "_cpu": _interval(spent.cpu_time) if spent else None,
        "_executor": spent.executor if spent else None,
    }
    for column in OUTCOME_COLUMNS:
        row[column] = getattr(job, column)
    return row


def _interval(value: timedelta | None) -> str | None:
    if value is None:
        return None
    return f"{value // timedelta(microseconds=1)} microseconds"


def _fenced_values(completion: Completion) -> dict[str, object]:
    job = completion.job
    values: dict[str, object] = {column: getattr(job, column) for column in OUTCOME_COLUMNS}
    values["updated_at"] = Now()
    if job.state in FINISHED_STATES:
        values["completed_at"] = Now()
    if job.state == JobState.RETRYING:
        values["run_at"] = db.now_plus(completion.retry_in or timedelta(0))
    return values


def purge_finished_jobs(
    *, completed_retention: timedelta, failed_retention: timedelta, limit: int
) -> int:
    """Delete up to ``limit`` finished jobs past their retention (by the database's
    clock): completed ones after ``completed_retention``, failed and cancelled ones
    (the dead letters an operator may still want to replay) after
    ``failed_retention``. Returns how many rows were removed."""
    if limit <= 0:
        return 0
    expired = Q(state=JobState.COMPLETED, completed_at__lt=db.now_minus(completed_retention))
    expired |= Q(
        state__in=[JobState.FAILED, JobState.CANCELLED],
        completed_at__lt=db.now_minus(failed_retention),
    )
    with transaction.atomic(using=db.alias()):
        # Locked as read (SKIP LOCKED: a row another session is changing, a
        # replay say, is left for the next run), so nothing can change a chosen
        # row before the delete; SQLite's IMMEDIATE transaction holds the whole
        # database instead. The delete tests the predicate again all the same:
        # it is what decides, row by row, and a DEFERRED SQLite transaction or
        # a caller's weaker isolation must not make it delete a live row.
        ids = list(
            _jobs()
            .filter(expired)
            .order_by("id")
            .select_for_update(skip_locked=True)
            .values_list("id", flat=True)[:limit]
        )
        if not ids:
            return 0
        # The collector sets replay_of to NULL on any replay pointing at a purged row.
        _, per_model = _jobs().filter(expired, id__in=ids).delete()
    return per_model.get(Job._meta.label, 0)


def _jobs() -> QuerySet[Job]:
    return Job.objects.using(db.alias())
