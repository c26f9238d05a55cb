"""PostgreSQL's INSERT: one lean ``INSERT ... RETURNING`` for one or many rows.

Django's save()/bulk_create() cost more per row in Python (a model instance,
per-field preparation and adapter objects) than the database needs to store
it. Here a shared value is one named parameter for the whole batch; each
column that varies travels as ONE JSON array, expanded by
``jsonb_array_elements`` side by side (``ROWS FROM``): a payload already
encoded for the size cap is joined into it as text, never encoded again.
Columns the rows do not set are the model's defaults, inlined in the
statement. The statement text depends only on the shape (which columns are
shared, which vary), so it is built once per shape.

The NOTIFY rides in the same statement (``pg_notify`` in RETURNING):
PostgreSQL folds identical notifications of one transaction into one and
delivers them at commit, so it still means "at most once per transaction and
queue, only if the rows commit" -- without a second round trip.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, cast

from django.db import connections
from django.db.models import JSONField, Value
from django.db.models.expressions import DatabaseDefault

from ...models import Job
from ..rows import EncodedJSON, NewJobs
from .postgresql_cursor import binds_client_side, kept_cursor, prepares, server_cursor


class Inserts:
    """The INSERT statements of one channel's notifications, per database alias."""

    def __init__(self, channel: str) -> None:
        self.channel = channel
        self.tables: dict[str, _Table] = {}

    def table(self, alias: str) -> _Table:
        table = self.tables.get(alias)
        if table is None:
            table = self.tables[alias] = _build_table(alias, self.channel)
        return table

    def insert(
        self, alias: str, new: NewJobs, returning: tuple[str, ...], *, notify: bool
    ) -> list[tuple[Any, ...]]:
        return _insert(self.table(alias), alias, new, returning, notify)

    def persist(self, alias: str, jobs: list[Job], *, notify: bool) -> list[Job]:
        """Write prepared ``Job`` instances; give them what the database assigned."""
        table = self.table(alias)
        rows = _insert(table, alias, _columns_of(table, jobs), table.returning, notify)
        for job, row in zip(jobs, rows, strict=True):
            for attname, value in zip(table.returning, row, strict=True):
                setattr(job, attname, value)
            job._state.adding = False
            job._state.db = alias
        return jobs


@dataclass(frozen=True)
class _Column:
    attname: str
    column: str  # quoted
    # The base type, without length: an explicit cast to varchar(n) would truncate
    # silently, where the INSERT's assignment raises like the ORM's insert.
    cast: str
    json: bool  # jsonb: sent as JSON text
    db_default: str  # the database default's SQL ("" when none): for DatabaseDefault
    absent: str  # the SQL written when a row gives no value: a default, inlined
    # The model's default when a value equal to it (and of its type) is stored the
    # same by ``absent``; else _NO_DEFAULT. See _parameters.
    default: object


@dataclass(frozen=True)
class _Table:
    name: str  # quoted
    columns: tuple[_Column, ...]
    column_list: str
    json: frozenset[str]  # attnames of the jsonb columns
    quoted: Mapping[str, str]  # attname -> quoted column, the key included
    returning: tuple[str, ...]  # the model's db_returning_fields, as attnames
    notify_sql: str
    notify_call: str  # pg_notify of the channel and a row's queue
    # Whether a row that does not set created_at gets the statement's timestamp
    # (the same for every row of one INSERT).
    created_by_statement: bool
    by_attname: Mapping[str, _Column]
    # Statement text per shape of NewJobs: built once, so an insert only binds.
    statements: dict[tuple[Any, ...], str] = field(default_factory=dict)


_NO_DEFAULT = object()
# Shapes kept per table; past it the cache starts over (a bound, not a tuning knob).
_MAX_SHAPES = 256
# The row count's parameter: "__" cannot occur in a field's name.
_COUNT = "__count"


def _insert(
    table: _Table, alias: str, new: NewJobs, returning: tuple[str, ...], notify: bool
) -> list[tuple[Any, ...]]:
    """One INSERT ... RETURNING for ``new``; ``returning``'s values per row, in
    row order."""
    shared, own = new.shared, new.own
    if new.size == 1 and own:
        # One row: every value is shared, and no set-returning function is needed.
        shared = {**shared, **{attname: values[0] for attname, values in own.items()}}
        own = {}
    params = _parameters(table, shared)
    aggregated = _aggregated(table, new.size, params, own, returning)
    shape = (tuple(params), tuple(own), new.size > 1, returning, notify, aggregated)
    sql = table.statements.get(shape)
    if sql is None:
        if len(table.statements) >= _MAX_SHAPES:
            table.statements.clear()
        sql = table.statements[shape] = _statement(table, *shape)
    for attname, values in own.items():
        params[attname] = _array(attname in table.json, values)
    if not own and new.size > 1:
        params[_COUNT] = new.size
    connection = connections[alias]
    kept = None if connection.in_atomic_block else kept_cursor(connection)
    if kept is not None:
        kept.execute(sql, params)
        rows = kept.fetchall()
    else:
        rows = _run(connection, sql, params)
    if aggregated:
        [(ids, created_at, *_)] = rows
        return [(job_id, created_at) for job_id in ids]
    # Ids are drawn in row order (the SELECT is ordered by input position), so
    # sorted ids map back onto the input order.
    rows.sort()
    if notify:
        width = len(returning)
        return [row[:width] for row in rows]
    return rows


def _run(connection: Any, sql: str, params: Mapping[str, Any]) -> list[tuple[Any, ...]]:
    with _insert_cursor(connection) as cursor:
        if connection.in_atomic_block and binds_client_side(connection):
            _execute_in_savepoint(cursor, sql, params)
        else:
            cursor.execute(sql, params)
        return cast(list[tuple[Any, ...]], cursor.fetchall())


# The savepoint an INSERT in the caller's transaction runs in (see below).
_SAVEPOINT = "dispatch_jobs_enqueue"


def _insert_cursor(connection: Any) -> Any:
    """The INSERT's cursor: in autocommit on an alias that prepares, one that binds
    server-side (``postgresql_cursor``); else the connection's usual cursor (inside
    ``atomic()`` the INSERT rides in a savepoint in the same round trip, which
    needs client-side binding)."""
    if connection.in_atomic_block or not prepares(connection):
        return connection.cursor()
    return server_cursor(connection)


def _execute_in_savepoint(cursor: Any, sql: str, params: Mapping[str, Any]) -> None:
    """Run the INSERT inside a savepoint of the caller's transaction, in the same
    round trip: should PostgreSQL still refuse a row that validation let through,
    the error reaches the caller and their transaction is rolled back to before
    the INSERT instead of being aborted (where every later query would fail).
    On success the cursor is left on the INSERT's rows."""
    try:
        cursor.execute(f"SAVEPOINT {_SAVEPOINT}; {sql}; RELEASE SAVEPOINT {_SAVEPOINT}", params)
    except Exception:
        # The INSERT's error is the one to report, whatever the clean-up meets.
        with suppress(Exception):
            cursor.execute(f"ROLLBACK TO SAVEPOINT {_SAVEPOINT}; RELEASE SAVEPOINT {_SAVEPOINT}")
        raise
    cursor.nextset()  # past the SAVEPOINT's empty result, onto the INSERT's rows


# What a bulk enqueue asks of its rows: their ids, and when they were created.
_NEW_ROW = ("id", "created_at")


def _aggregated(
    table: _Table,
    size: int,
    params: Mapping[str, Any],
    own: Mapping[str, Any],
    returning: tuple[str, ...],
) -> bool:
    """Whether a many-row INSERT returns one row: every id in one array and the
    statement's timestamp once, instead of a row per job. It can when the rows are
    created at the statement's time (none sets created_at); reading a timestamp
    per row cost the client about 1 µs a row, and the notification is then sent
    once per queue, not asked for per row."""
    return (
        size > 1
        and returning == _NEW_ROW
        and table.created_by_statement
        and "created_at" not in params
        and "created_at" not in own
    )


def _statement(
    table: _Table,
    shared: tuple[str, ...],
    own: tuple[str, ...],
    many: bool,
    returning: tuple[str, ...],
    notify: bool,
    aggregated: bool,
) -> str:
    """The INSERT for one shape of NewJobs. Parameters are named by attname."""
    position = {attname: index for index, attname in enumerate(own)}
    selected = []
    for column in table.columns:
        if column.attname in position:
            selected.append(_element(column, position[column.attname]))
        elif column.attname in shared:
            selected.append(f"%({column.attname})s::{column.cast}")
        else:
            selected.append(column.absent)
    sql = f"INSERT INTO {table.name} ({table.column_list}) SELECT {', '.join(selected)}"
    if own:
        arrays = ", ".join(f"jsonb_array_elements(%({attname})s::jsonb)" for attname in own)
        names = ", ".join(f"c{index}" for index in range(len(own)))
        sql += f" FROM ROWS FROM ({arrays}) WITH ORDINALITY AS r({names}, n) ORDER BY r.n"
    elif many:
        sql += f" FROM generate_series(1, %({_COUNT})s) AS r(n)"
    if aggregated:
        # Ids are drawn in row order, so sorted they are the rows' order.
        key, queue = table.quoted["id"], table.quoted["queue"]
        sql = (
            f"WITH new AS ({sql} RETURNING {key}, {queue}) "
            f"SELECT array_agg({key} ORDER BY {key}), STATEMENT_TIMESTAMP()"
        )
        if notify:
            # Once per queue of the rows (pg_notify is volatile: never left out).
            queues = f"SELECT DISTINCT {queue} FROM new"
            sent = f"SELECT {table.notify_call} FROM ({queues}) AS q"
            sql += f", (SELECT count(*) FROM ({sent}) AS n)"
        return sql + " FROM new"
    sql += " RETURNING " + ", ".join(table.quoted[attname] for attname in returning)
    return sql + (table.notify_sql if notify else "")


def _parameters(table: _Table, shared: Mapping[str, Any]) -> dict[str, Any]:
    """The shared values as parameters, but for those the column's inlined default
    writes the same: most of a task's options are the model's defaults, and each
    parameter left out is one less to quote and send per INSERT."""
    params = {}
    for attname, value in shared.items():
        column = table.by_attname[attname]
        default = column.default
        if type(value) is type(default) and value == default:
            continue
        params[attname] = _json_text(value) if column.json else value
    return params


def _json_text(value: object) -> str | None:
    """A jsonb parameter: None is SQL NULL (as Django writes a model's None)."""
    if value is None:
        return None
    if isinstance(value, EncodedJSON):
        return value.text
    return json.dumps(value)


def _array(is_json: bool, values: Sequence[Any]) -> str:
    """One varying column as a JSON array, one element per row."""
    if is_json:
        return "[" + ",".join([_json_text(v) or "null" for v in values]) + "]"
    return json.dumps([_plain(v) for v in values])


def _element(column: _Column, index: int) -> str:
    """A varying column's value in the row: element ``index`` of ROWS FROM."""
    if column.json:
        # JSON null is SQL NULL for a model's None (as Django writes it).
        return f"NULLIF(r.c{index}, 'null'::jsonb)"
    expression = f"(r.c{index} #>> '{{}}')::{column.cast}"
    if column.db_default:
        return f"COALESCE({expression}, {column.db_default})"
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


def _columns_of(table: _Table, jobs: Sequence[Job]) -> NewJobs:
    """Prepared ``Job`` instances as columns: a value every job has is shared; a
    database default is left to the database."""
    count = len(jobs)
    shared: dict[str, Any] = {}
    own: dict[str, list[Any]] = {}
    for column in table.columns:
        values = [getattr(job, column.attname) for job in jobs]
        if not _constant(column, values, count):
            own[column.attname] = values
        elif not isinstance(values[0], DatabaseDefault):
            shared[column.attname] = values[0]
    return NewJobs(count, shared, own)


def _constant(column: _Column, values: list[Any], count: int) -> bool:
    """One value for the whole batch? JSON values only when None or empty: equal
    Python values may encode differently (1 == 1.0 == True)."""
    first = values[0]
    if column.json and not (first is None or (type(first) in (dict, list) and not first)):
        return False
    return values.count(first) == count


def _build_table(alias: str, channel_name: str) -> _Table:
    connection = connections[alias]
    compiler = Job.objects.using(alias).none().query.get_compiler(alias)
    quote = connection.ops.quote_name
    columns = []
    for model_field in Job._meta.concrete_fields:
        if model_field.primary_key:
            continue
        cast_to = re.sub(r"\(\d+\)", "", str(model_field.db_type(connection)))
        db_default = ""
        if model_field.has_db_default():
            expression = model_field.db_default
            if not hasattr(expression, "as_sql"):
                expression = Value(expression, output_field=model_field)
            db_default, default_params = compiler.compile(expression)
            if default_params:
                raise AssertionError(f"{model_field.name}: a parameterised db_default")
            absent = db_default
            default = _NO_DEFAULT
        else:
            default = model_field.get_default()
            if isinstance(model_field, JSONField) and default not in (None, {}, []):
                # Equal JSON can differ in type inside (1 == 1.0 == True).
                default = _NO_DEFAULT
            # The model's default as a literal, quoted by the driver (compose_sql:
            # PostgreSQL's operations only, which is where this runs).
            value = model_field.get_db_prep_save(model_field.get_default(), connection)
            literal = cast(Any, connection.ops).compose_sql("%s", [value])
            absent = f"{literal}::{cast_to}"
        columns.append(
            _Column(
                attname=model_field.attname,
                column=quote(str(model_field.column)),
                cast=cast_to,
                json=isinstance(model_field, JSONField),
                db_default=_inline(db_default),
                absent=_inline(absent),
                default=default,
            )
        )
    channel = "'" + channel_name.replace("'", "''") + "'"
    return _Table(
        name=_inline(quote(Job._meta.db_table)),
        columns=tuple(columns),
        column_list=_inline(", ".join(c.column for c in columns)),
        json=frozenset(c.attname for c in columns if c.json),
        quoted={f.attname: _inline(quote(str(f.column))) for f in Job._meta.concrete_fields},
        returning=tuple(f.attname for f in Job._meta.db_returning_fields),
        by_attname={c.attname: c for c in columns},
        # queue is a column of the new row; one notification per row, folded per queue.
        notify_sql=_inline(f", pg_notify({channel}, {quote('queue')})"),
        notify_call=_inline(f"pg_notify({channel}, {quote('queue')})"),
        created_by_statement=any(
            c.attname == "created_at" and c.absent == "STATEMENT_TIMESTAMP()" for c in columns
        ),
    )


def _inline(sql: str) -> str:
    """Text placed in a statement that has %(name)s parameters: % doubled."""
    return sql.replace("%", "%%")
