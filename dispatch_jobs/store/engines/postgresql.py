"""PostgreSQL: a claim, a completion batch and an insert are each ONE statement."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Sequence
from datetime import timedelta
from typing import Any

from django.db import connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import BooleanField, Expression, Q
from django.db.models.expressions import RawSQL

from ...models import Job, JobState, Usage
from .. import db
from ..options import ClaimOptions
from ..rows import NewJobs
from ..transitions import OUTCOME_COLUMNS, Settled
from . import portable
from .postgresql_cursor import fetched, prepared_cursor, replanned, statement_cursor
from .postgresql_insert import Inserts

CHANNEL = "dispatch_jobs"


class PostgreSQL:
    vendor = "postgresql"
    # Each state change writes every index whose condition the new row meets:
    # the filter indexes hold finished rows only (migration 0015).
    finished_apart = True

    def __init__(self) -> None:
        self.claims = portable.ReturningClaims(self._chosen, prepared_cursor, fetched)
        self.inserts = Inserts(CHANNEL)
        # The completion statement by database alias: the same text every batch.
        self.batches: dict[str, str] = {}

    @property
    def notifies(self) -> bool:
        from ...conf import settings

        return settings.notify

    # --- claim

    def claim(self, opts: ClaimOptions) -> list[Job]:
        """Select, lock, mark running, lease and read back in ONE statement:
        ``UPDATE job SET ... WHERE id = ANY(ARRAY(SELECT id ... LIMIT n FOR
        UPDATE SKIP LOCKED)) RETURNING *``. One statement is atomic on its own
        (autocommit) or inside the caller's transaction."""
        return replanned(connections[db.alias()], lambda: self.claims.run(opts))

    @staticmethod
    def _chosen(select_sql: str, params: tuple[Any, ...]) -> Q:
        """``ARRAY(subquery)`` is an init plan, evaluated exactly once: a plain
        ``IN (subquery)`` may be re-scanned by the plan and, with SKIP LOCKED,
        answer differently each time (claiming more than the limit). The
        sub-select's row locks are what concurrent claimers skip. The lock
        clause is appended rather than asked of the ORM (``select_for_update``),
        which refuses to compile a locking SELECT in autocommit, though this one
        runs inside a single, hence atomic, statement; PostgreSQL takes it after
        LIMIT, as here."""
        connection = connections[db.alias()]
        locking = f"{select_sql} {connection.ops.for_update_sql(skip_locked=True)}"
        quote = connection.ops.quote_name
        return Q(
            RawSQL(
                f"{quote(Job._meta.db_table)}.{quote('id')} = ANY(ARRAY({locking}))",
                params,
                output_field=BooleanField(),
            )
        )

    def read(self, ids: Sequence[int]) -> list[Job]:
        return portable.read_jobs(ids, fetch=fetched)

    # --- completion

    def complete(self, worker_id: str, settled: Sequence[Settled]) -> set[int]:
        """The whole batch as ONE statement (one round trip, one commit), usage
        rows included.

        The outcomes travel as one JSON parameter unpacked by
        ``jsonb_to_recordset``, so the statement text is the same for every batch
        (parsed once by the driver, whatever the batch size). The CTE locks the
        batch's rows in id order before anything is written, the order
        ``renew_leases`` and ``release_leases`` lock in, so a concurrent renewal
        waits for this batch instead of deadlocking with it. Each row's fence
        (running, this worker, its epoch) is tested on the locked row version: a
        lease moved on meanwhile leaves its row untouched, its id unreturned and
        its usage unwritten."""
        connection = connections[db.alias()]
        rows = json.dumps([_json_row(s) for s in settled])
        ids = [s.job_id for s in settled]
        sql = self.batches.get(connection.alias)
        if sql is None:
            sql = self.batches[connection.alias] = _batch_sql(connection)
        params: list[Any] = [ids, rows, worker_id, str(JobState.RUNNING), worker_id]
        # In autocommit the one statement is atomic on its own. Inside a caller's
        # transaction it gets a savepoint, so a refused batch can be split and
        # written apart without aborting the caller's transaction.
        in_transaction = connection.in_atomic_block

        def run() -> set[int]:
            guard = transaction.atomic(using=connection.alias) if in_transaction else None
            with guard or contextlib.nullcontext(), statement_cursor(connection) as cursor:
                cursor.execute(sql, params)
                return {row[0] for row in cursor.fetchall()}

        return set(ids) - replanned(connection, run)

    # --- insert

    def insert(self, new: NewJobs, returning: tuple[str, ...]) -> list[tuple[Any, ...]]:
        # One statement is atomic on its own: no transaction of ours needed (and,
        # inside the caller's, the statement brings its own savepoint).
        alias = db.alias()
        return replanned(
            connections[alias],
            lambda: self.inserts.insert(alias, new, returning, notify=self.notifies),
        )

    def persist(self, jobs: list[Job], *, many: bool) -> list[Job]:
        alias = db.alias()
        return replanned(
            connections[alias], lambda: self.inserts.persist(alias, jobs, notify=self.notifies)
        )

    def notify(self, queues: Sequence[str]) -> None:
        """One ``pg_notify`` per distinct queue (payload: the queue name), sent
        inside the current transaction: delivered at commit, never on rollback;
        PostgreSQL folds identical notifications of one transaction into one."""
        names = sorted(set(queues))
        if not names or not self.notifies:
            return
        with connections[db.alias()].cursor() as cursor:
            cursor.execute("SELECT pg_notify(%s, q) FROM unnest(%s::text[]) AS q", [CHANNEL, names])

    # --- the rest

    @contextlib.contextmanager
    def statement_timeout(self, timeout: timedelta) -> Iterator[None]:
        """Set with ``set_config(..., is_local => true)`` inside a transaction (a
        savepoint inside the caller's), and set back as it was when the block
        ends; a block that fails is rolled back, which undoes it too. It never
        reaches the connection's later queries (a worker or another request
        sharing it)."""
        connection = connections[db.alias()]
        milliseconds = max(1, int(timeout.total_seconds() * 1000))
        with transaction.atomic(using=connection.alias):
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT current_setting('statement_timeout'), "
                    "set_config('statement_timeout', %s, true)",
                    [str(milliseconds)],
                )
                before = cursor.fetchone()[0]
            yield
            with connection.cursor() as cursor:
                cursor.execute("SELECT set_config('statement_timeout', %s, true)", [before])

    def exact_text(self, expression: Expression) -> Expression:
        return expression  # text compares byte for byte (the C or ICU collation decides case)

    def refuses_content(self, exc: BaseException) -> bool:
        return portable.refused_for_values(exc)

    def connected(self, connection: BaseDatabaseWrapper) -> None:
        pass


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
    types += ["_wall interval", "_cpu interval", "_executor text", "_rss bigint", "_disk bigint"]
    fields = {f.attname: f for f in Job._meta.concrete_fields}
    for column in OUTCOME_COLUMNS:
        types.append(f"{quote(column)} {fields[column].cast_db_type(connection)}")
    # The fence is checked on the rows the CTE locked (PostgreSQL hands FOR
    # UPDATE the latest version, re-read after any lock wait, and nobody can
    # change it before this statement commits), not on the table in the
    # UPDATE's WHERE: there the planner may pick the worker_id index to test the
    # fence and read every row this worker ever ran, growing with the table.
    # Here the only predicate on the table is its key.
    returned = ", ".join(f"{value} AS {name}" for name, value in _USAGE_FROM_JOB.items())
    return (
        "WITH locked AS MATERIALIZED (SELECT id, lease_epoch, worker_id, state "
        f"FROM {table} WHERE id = ANY(%s::bigint[]) ORDER BY id FOR UPDATE), "
        f"done AS (UPDATE {table} AS job SET {', '.join(assignments)} "
        f"FROM locked JOIN jsonb_to_recordset(%s::jsonb) AS v({', '.join(types)}) "
        "ON v._id = locked.id "
        "WHERE job.id = locked.id AND locked.lease_epoch = v._epoch "
        "AND locked.worker_id = %s AND locked.state = %s "
        f"RETURNING {returned}, "
        "v._wall, v._cpu, v._executor, v._rss, v._disk), "
        f"{_usage_insert(connection)} "
        "SELECT job_id FROM done"
    )


# Each usage column taken from the job row as written, and its value: the batch
# returns these (not whole rows: every column of hundreds of rows, copied into the
# CTE's result for nothing), named after the usage columns they fill.
_USAGE_FROM_JOB = {
    "job_id": "job.id",
    "name": "job.name",
    "queue": "job.queue",
    "attempt": "COALESCE(jsonb_array_length(job.attempts), 0)",
    "status": "job.state",
    "input_bytes": "job.input_bytes",
    "resources": "job.resources",
    "scope_app_id": "job.scope_app_id",
    "scope_org_id": "job.scope_org_id",
}


def _usage_insert(connection: BaseDatabaseWrapper) -> str:
    """The CTE that writes a usage row for each written completion that was
    measured (``_wall`` set), its columns taken from the row as written."""
    quote = connection.ops.quote_name
    values = {name: name for name in _USAGE_FROM_JOB}
    values.update(wall_time="_wall", cpu_time="_cpu", executor="_executor")
    values.update(peak_rss="_rss", disk_written="_disk", worker_id="%s")
    values["recorded_at"] = "STATEMENT_TIMESTAMP()"
    columns = {f.name: str(f.column) for f in Usage._meta.concrete_fields}
    names = ", ".join(quote(columns[name]) for name in values)
    return (
        f"spent AS (INSERT INTO {quote(Usage._meta.db_table)} ({names}) "
        f"SELECT {', '.join(values.values())} FROM done WHERE _wall IS NOT NULL)"
    )


def _json_row(settled: Settled) -> dict[str, object]:
    """One outcome as a JSON object the recordset reads back column by column:
    JSON columns nested as they are, durations as interval text, the rest as
    JSON scalars (JSON null is SQL NULL, as ``update`` writes for None)."""
    spent = settled.spent
    row: dict[str, object] = {
        "_id": settled.job_id,
        "_epoch": settled.epoch,
        "_finished": settled.finishes,
        "_retry_in": _interval(settled.retry_in),
        "_wall": _interval(spent.wall_time) if spent else None,
        "_cpu": _interval(spent.cpu_time) if spent else None,
        "_executor": spent.executor if spent else None,
        "_rss": spent.peak_rss if spent else None,
        "_disk": spent.disk_written if spent else None,
    }
    row.update(settled.values())
    return row


def _interval(value: timedelta | None) -> str | None:
    if value is None:
        return None
    # Whole microseconds by arithmetic: ``value // timedelta(microseconds=1)``
    # builds a timedelta and divides, five times the cost, three times per job.
    return f"{(value.days * 86_400 + value.seconds) * 1_000_000 + value.microseconds} microseconds"
