"""Completion: the worker's fenced outcome writes, batched, and the purge of
finished jobs past their retention.

A completion is the fenced write of ``update_leased_job`` (running, held by this
worker, at this epoch; never the lease-owned columns), with the times that decide
readiness taken from the database's clock: a retry's ``run_at`` is database-now
plus the backoff, so worker clock skew cannot make a retry run early or late.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache

from django.db import connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Q, QuerySet
from django.db.models.functions import Now

from ..models import FINISHED_STATES, Job, JobState
from . import db
from .leases import _fenced_update_values, _held


@dataclass(frozen=True)
class Completion:
    """One attempt's outcome to persist: ``job`` carries the new column values
    (state, attempts, last_error, return_value ...); ``epoch`` is the lease it was
    run under; ``retry_in`` (state retrying only) is the backoff from database-now."""

    job: Job
    epoch: int
    retry_in: timedelta | None = None


def complete_leased_jobs(worker_id: str, completions: Sequence[Completion]) -> set[int]:
    """Write many outcomes in one transaction, each behind its own fence.

    Returns the ids whose lease was lost (or whose row is gone): those rows are
    untouched, and the caller discards their outcome. One transaction for the
    batch is one commit (and on SQLite one write lock) instead of one per job.
    """
    if not completions:
        return set()
    ordered = sorted(completions, key=lambda c: c.job.pk)
    if db.vendor() == "postgresql":
        return _complete_in_one_statement(worker_id, ordered)
    return _complete_row_by_row(worker_id, ordered)


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
    return lost


def _complete_in_one_statement(worker_id: str, ordered: Sequence[Completion]) -> set[int]:
    """PostgreSQL: the whole batch as ONE statement (one round trip, one commit).

    The outcomes travel as one JSON parameter unpacked by ``jsonb_to_recordset``,
    so the statement text is the same for every batch (parsed once by the
    driver, whatever the batch size). The CTE locks the batch's rows in id order
    before anything is written, the order ``renew_leases`` and ``release_leases``
    lock in, so a concurrent renewal waits for this batch instead of
    deadlocking with it. Each row's fence (running, this worker, its epoch) is
    in the UPDATE's WHERE, which PostgreSQL re-checks against the latest row
    version after a lock wait: a lease moved on meanwhile leaves its row
    untouched and its id unreturned.
    """
    connection = connections[db.alias()]
    columns = _written_columns()
    rows = json.dumps([_json_row(c, columns) for c in ordered])
    ids = [c.job.pk for c in ordered]
    with connection.cursor() as cursor:
        cursor.execute(_batch_sql(connection), [ids, rows, worker_id, str(JobState.RUNNING)])
        written = {row[0] for row in cursor.fetchall()}
    return set(ids) - written


# Columns whose completion value comes from the database clock, not the job.
_DB_CLOCK = frozenset({"completed_at", "run_at"})


@cache
def _written_columns() -> tuple[str, ...]:
    """Exactly the columns of the fenced write (``_fenced_update_values``), in
    model order; ``updated_at`` is set from the database clock separately."""
    sample = _fenced_update_values(Job())
    sample.pop("updated_at")
    return tuple(f.attname for f in Job._meta.concrete_fields if f.attname in sample)


def _batch_sql(connection: BaseDatabaseWrapper) -> str:
    quote = connection.ops.quote_name
    table = quote(Job._meta.db_table)
    columns = _written_columns()
    assignments = [f"{quote(c)} = v.{quote(c)}" for c in columns if c not in _DB_CLOCK]
    assignments += [
        f"{quote('updated_at')} = STATEMENT_TIMESTAMP()",
        # Database-now for finished jobs, as Now() does in the row-by-row path.
        f"{quote('completed_at')} = CASE WHEN v._finished THEN STATEMENT_TIMESTAMP() "
        f"ELSE v.{quote('completed_at')} END",
        # A retry becomes ready at database-now + backoff: no worker clock involved.
        f"{quote('run_at')} = CASE WHEN v._retry_in IS NULL THEN v.{quote('run_at')} "
        "ELSE STATEMENT_TIMESTAMP() + v._retry_in END",
    ]
    types = ["_id bigint", "_epoch integer", "_finished boolean", "_retry_in interval"]
    fields = {f.attname: f for f in Job._meta.concrete_fields}
    for column in columns:
        types.append(f"{quote(column)} {fields[column].cast_db_type(connection)}")
    return (
        f"WITH locked AS MATERIALIZED (SELECT id FROM {table} WHERE id = ANY(%s) "
        "ORDER BY id FOR UPDATE) "
        f"UPDATE {table} AS job SET {', '.join(assignments)} "
        f"FROM jsonb_to_recordset(%s::jsonb) AS v({', '.join(types)}) "
        "WHERE job.id = v._id AND job.id IN (SELECT id FROM locked) "
        "AND job.lease_epoch = v._epoch AND job.worker_id = %s AND job.state = %s "
        "RETURNING job.id"
    )


def _json_row(completion: Completion, columns: Sequence[str]) -> dict[str, object]:
    """One outcome as a JSON object the recordset reads back column by column:
    JSON columns nested as they are, times as ISO text, durations as interval
    text, the rest as JSON scalars (JSON null is SQL NULL, as ``update`` writes
    for None)."""
    job = completion.job
    retry_in = (completion.retry_in or timedelta(0)) if job.state == JobState.RETRYING else None
    row: dict[str, object] = {
        "_id": job.pk,
        "_epoch": completion.epoch,
        "_finished": job.state in FINISHED_STATES,
        "_retry_in": _interval(retry_in),
    }
    for column in columns:
        value = getattr(job, column)
        if isinstance(value, datetime):
            value = value.isoformat()
        elif isinstance(value, timedelta):
            value = _interval(value)
        row[column] = value
    return row


def _interval(value: timedelta | None) -> str | None:
    if value is None:
        return None
    return f"{value // timedelta(microseconds=1)} microseconds"


def _fenced_values(completion: Completion) -> dict[str, object]:
    job = completion.job
    values = _fenced_update_values(job)
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
    ids = list(_jobs().filter(expired).order_by("id").values_list("id", flat=True)[:limit])
    if not ids:
        return 0
    # The collector sets replay_of to NULL on any replay pointing at a purged row.
    _, per_model = _jobs().filter(id__in=ids).delete()
    return per_model.get(Job._meta.label, 0)


def _jobs() -> QuerySet[Job]:
    return Job.objects.using(db.alias())
