"""Writing new jobs: one, or many in one round trip.

Enqueue runs in the caller's transaction: a job enqueued inside ``atomic()`` is
rolled back with it and becomes visible to workers when it commits.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import connections, transaction
from django.db.models import JSONField, Value
from django.db.models.expressions import DatabaseDefault

from ..conf import settings
from ..exceptions import InvalidJob, PayloadTooLarge
from ..models import Job, JobState
from ..resources import STANDARD_KEYS, custom_keys_of, encode_custom_keys
from . import db

NAME_MAX = 255
QUEUE_MAX = 100


def payload_size(name: str, payload: object) -> int:
    """The payload's encoded size in bytes; refuses anything that is not JSON."""
    try:
        encoded = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise InvalidJob(f"Payload of {name!r} is not JSON-serialisable: {exc}") from exc
    return len(encoded.encode())


def prepare(job: Job, max_payload_bytes: int | None = None) -> Job:
    """Validate a new job and fill the columns derived from its resources.
    ``max_payload_bytes`` defaults to the setting (read once per batch by callers
    that prepare many: a settings read costs more than the check)."""
    cap = settings.max_payload_bytes if max_payload_bytes is None else max_payload_bytes
    if job.pk is not None:
        raise InvalidJob(f"Job {job.pk} already exists; enqueue only new jobs.")
    if not isinstance(job.name, str) or not job.name or len(job.name) > NAME_MAX:
        raise InvalidJob(f"Job name must be a non-empty string of at most {NAME_MAX} chars.")
    if not isinstance(job.queue, str) or not job.queue or len(job.queue) > QUEUE_MAX:
        raise InvalidJob(
            f"Queue of {job.name!r} must be a non-empty string of at most {QUEUE_MAX} chars, "
            f"got {job.queue!r}."
        )
    for field in ("priority", "max_retries"):
        value = getattr(job, field)
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidJob(f"{field} of {job.name!r} must be an integer, got {value!r}.")
    if job.max_retries < 0:
        raise InvalidJob(f"max_retries of {job.name!r} must be >= 0, got {job.max_retries}.")
    size = payload_size(job.name, job.payload)
    if size > cap:
        raise PayloadTooLarge(job.name, size, cap)
    resources = job.resources or {}
    for key, amount in resources.items():
        if isinstance(amount, bool) or not isinstance(amount, int) or amount < 0:
            raise InvalidJob(
                f"Resource {key!r} of {job.name!r} must be a non-negative integer in "
                f"canonical units, got {amount!r}."
            )
    for key in STANDARD_KEYS:
        setattr(job, key, int(resources.get(key, 0)))
    job.custom_keys = encode_custom_keys(custom_keys_of(resources))
    job.state = JobState.PENDING
    return job


def enqueue_job(job: Job) -> Job:
    """Persist one new job in the pending state and return it with its id."""
    prepare(job)
    alias = db.alias()
    if connections[alias].vendor == "postgresql":
        _insert_postgresql(alias, [job])
        return job
    job.save(using=alias, force_insert=True)
    _notify_enqueued([job])
    return job


def enqueue_jobs(jobs: Sequence[Job]) -> list[Job]:
    """Persist many new jobs in one INSERT; all are validated before any is written."""
    cap = settings.max_payload_bytes
    prepared = [prepare(job, cap) for job in jobs]
    if not prepared:
        return []
    alias = db.alias()
    if connections[alias].vendor == "postgresql":
        # One statement is atomic on its own: no transaction of ours needed.
        _insert_postgresql(alias, prepared)
        return prepared
    with transaction.atomic(using=alias):
        created = Job.objects.using(alias).bulk_create(prepared)
    _notify_enqueued(created)
    return created


@dataclass(frozen=True)
class _Column:
    attname: str
    column: str  # quoted
    # The base type, without length: an explicit cast to varchar(n) would truncate
    # silently, where the INSERT's assignment raises like the ORM's insert.
    cast: str
    json: bool  # jsonb: sent as JSON text
    default_sql: str  # the database default, written when the value is DatabaseDefault


@dataclass(frozen=True)
class _Table:
    name: str  # quoted
    columns: tuple[_Column, ...]
    column_list: str
    returning: tuple[str, ...]  # attnames, in RETURNING order
    returning_sql: str
    notify_sql: str


_TABLES: dict[str, _Table] = {}


def _insert_postgresql(alias: str, jobs: Sequence[Job]) -> None:
    """The PostgreSQL hot path: one lean INSERT ... RETURNING for one or many jobs.

    Django's save()/bulk_create() cost more per row in Python (per-field
    preparation and adapter objects) than the database needs to store it. Here
    one row is plain values. Many rows: a column with one value for the whole
    batch is one parameter; the columns that vary travel as ONE JSON document of
    rows (encoded by the json module in C), unpacked by ``jsonb_array_elements``
    -- Python-side per-row work is a getattr per column. (Server-side binding
    was measured too: no faster than Django's client-side binding here.)
    The NOTIFY rides in the same statement (``pg_notify`` in RETURNING):
    PostgreSQL folds identical notifications of one transaction into one and
    delivers them at commit, so it still means "at most once per transaction and
    queue, only if the rows commit" -- without a second round trip.
    """
    table = _table(alias)
    sql, params = _single_row(table, jobs[0]) if len(jobs) == 1 else _many_rows(table, jobs)
    # notify_enabled() without its vendor check: this is the PostgreSQL path.
    sql += table.returning_sql + (table.notify_sql if settings.notify else "")
    connection = connections[alias]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        returned = cursor.fetchall()
    # Ids are drawn in row order (the SELECT is ordered by input position), so
    # sorted ids map back onto the input order.
    returned.sort(key=lambda row: row[0])
    for job, row in zip(jobs, returned, strict=True):
        for attname, value in zip(table.returning, row, strict=False):
            setattr(job, attname, value)
        job._state.adding = False
        job._state.db = alias


def _single_row(table: _Table, job: Job) -> tuple[str, list[Any]]:
    params: list[Any] = []
    values = ", ".join(_scalar(c, getattr(job, c.attname), params) for c in table.columns)
    return f"INSERT INTO {table.name} ({table.column_list}) VALUES ({values})", params


def _many_rows(table: _Table, jobs: Sequence[Job]) -> tuple[str, list[Any]]:
    count = len(jobs)
    params: list[Any] = []
    selected: list[str] = []
    varying: list[list[Any]] = []
    for column in table.columns:
        values = [getattr(job, column.attname) for job in jobs]
        if _constant(column, values, count):
            selected.append(_scalar(column, values[0], params))
        else:
            selected.append(_element(column, len(varying)))
            varying.append(values if column.json else [_plain(v) for v in values])
    if varying:
        params.append(json.dumps([list(row) for row in zip(*varying, strict=True)]))
        source = "jsonb_array_elements(%s::jsonb) WITH ORDINALITY AS r(v, n)"
    else:
        params.append(count)
        source = "generate_series(1, %s) AS r(n)"
    sql = (
        f"INSERT INTO {table.name} ({table.column_list}) "
        f"SELECT {', '.join(selected)} FROM {source} ORDER BY r.n"
    )
    return sql, params


def _constant(column: _Column, values: list[Any], count: int) -> bool:
    """One value for the whole batch? JSON values only when None or empty: equal
    Python values may encode differently (1 == 1.0 == True)."""
    first = values[0]
    if column.json and not (first is None or (type(first) in (dict, list) and not first)):
        return False
    return values.count(first) == count


def _scalar(column: _Column, value: object, params: list[Any]) -> str:
    if isinstance(value, DatabaseDefault):
        return column.default_sql
    if value is None:
        return "NULL"
    params.append(json.dumps(value) if column.json else value)
    return f"%s::{column.cast}"


def _element(column: _Column, index: int) -> str:
    if column.json:
        # JSON null is SQL NULL for a model's None (as Django writes it).
        return f"NULLIF(r.v->{index}, 'null'::jsonb)"
    expression = f"(r.v->>{index})::{column.cast}"
    if column.default_sql:
        return f"COALESCE({expression}, {column.default_sql})"
    return expression


def _plain(value: object) -> object:
    """A non-JSON column's value as JSON the column's type parses back exactly."""
    if isinstance(value, DatabaseDefault):
        return None  # COALESCE'd to the database default
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, timedelta):
        return f"{value.days} days {value.seconds} seconds {value.microseconds} microseconds"
    return value


def _table(alias: str) -> _Table:
    table = _TABLES.get(alias)
    if table is None:
        table = _TABLES[alias] = _build_table(alias)
    return table


def _build_table(alias: str) -> _Table:
    from .notify import CHANNEL

    connection = connections[alias]
    compiler = Job.objects.using(alias).none().query.get_compiler(alias)
    quote = connection.ops.quote_name
    columns = []
    for field in Job._meta.concrete_fields:
        if field.primary_key:
            continue
        default_sql = ""
        if field.has_db_default():
            expression = field.db_default
            if not hasattr(expression, "as_sql"):
                expression = Value(expression, output_field=field)
            default_sql, default_params = compiler.compile(expression)
            if default_params:
                raise AssertionError(f"{field.name}: a parameterised db_default cannot be inlined")
        columns.append(
            _Column(
                attname=field.attname,
                column=quote(str(field.column)),
                cast=re.sub(r"\(\d+\)", "", str(field.db_type(connection))),
                json=isinstance(field, JSONField),
                default_sql=default_sql,
            )
        )
    returning_fields = Job._meta.db_returning_fields
    returning = tuple(f.attname for f in returning_fields)
    returned = ", ".join(quote(str(f.column)) for f in returning_fields)
    channel = "'" + CHANNEL.replace("'", "''") + "'"
    return _Table(
        name=quote(Job._meta.db_table),
        columns=tuple(columns),
        column_list=", ".join(c.column for c in columns),
        returning=returning,
        returning_sql=f" RETURNING {returned}",
        # queue is a column of the new row; one notification per row, folded per queue.
        notify_sql=f", pg_notify({channel}, {quote('queue')})",
    )


def _notify_enqueued(jobs: Sequence[Job]) -> None:
    """Wake idle workers on PostgreSQL: one NOTIFY per queue, delivered at commit.
    (The PostgreSQL insert path sends its notifications in the INSERT itself.)"""
    from .notify import notify_queues

    notify_queues(job.queue for job in jobs)
