"""Writing new jobs: one, or many in one round trip.

Enqueue runs in the caller's transaction: a job enqueued inside ``atomic()`` is
rolled back with it and becomes visible to workers when it commits.

Two ways in, one INSERT. ``enqueue_job(s)`` take ``Job`` instances and validate
them here (``prepare``): the store's own API. ``insert_jobs`` takes rows as
columns (``NewJobs``), which the tasks backend builds straight from a task's
resolved options after validating every call itself, so a batch costs no model
instance per row. On PostgreSQL both end in the same lean statement
(``_insert_postgresql``); elsewhere in the ORM's insert.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext, suppress
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, NamedTuple, cast

from django.db import connections, transaction
from django.db.models import JSONField, Value
from django.db.models.expressions import DatabaseDefault

from .. import limits
from ..conf import settings
from ..exceptions import InvalidDuration, InvalidJob, InvalidResources, PayloadTooLarge
from ..models import Job, JobState
from ..resources import (
    STANDARD_KEYS,
    check_custom_key_count,
    check_quantity,
    custom_keys_of,
    encode_custom_keys,
)
from ..storable import check_storable_text, locate_unstorable
from . import db

NAME_MAX = limits.NAME_MAX
# The encoding the payload cap measures: compact, non-ASCII kept as UTF-8. One
# encoder for every call: json.dumps() with options builds a new one each time.
# NaN and Infinity are refused: no database's JSON column accepts them.
_COMPACT = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)
# The RETURNING of insert_jobs: what a task result needs of a new row.
NEW_ROW = ("id", "created_at")


class EncodedJSON:
    """A JSON column's value together with its encoding, so it is encoded once:
    the payload cap measures ``text`` and the PostgreSQL INSERT sends it as is;
    the ORM path stores ``value``. The text differs from Django's encoding in
    spacing and escapes only (compact, UTF-8 as is): jsonb stores the same."""

    __slots__ = ("text", "value")

    def __init__(self, value: object, text: str) -> None:
        self.value = value
        self.text = text


class NewJobs(NamedTuple):
    """New job rows as columns, keyed by attname. ``shared`` holds the values every
    row has (one parameter for the batch), ``own`` one value per row, in row order.
    A column in neither gets the model's default; JSON columns may hold
    ``EncodedJSON``. The state is always pending."""

    size: int  # rows
    shared: Mapping[str, Any]
    own: Mapping[str, Sequence[Any]]


def encode_payload(name: str, payload: object) -> str:
    """The payload as the compact JSON text the cap measures; refuses anything
    that is not JSON."""
    try:
        return _COMPACT.encode(payload)
    except (TypeError, ValueError) as exc:
        raise InvalidJob(f"Payload of {name!r} is not JSON-serialisable: {exc}") from exc


def encoded_size(text: str) -> int:
    """Bytes of ``text`` in UTF-8 (ASCII text is counted without encoding it)."""
    return len(text) if text.isascii() else len(text.encode())


def payload_size(name: str, payload: object) -> int:
    """The payload's encoded size in bytes; refuses anything that is not JSON."""
    return encoded_size(encode_payload(name, payload))


_NO_RESOURCES: dict[str, Any] = {**dict.fromkeys(STANDARD_KEYS, 0), "custom_keys": ""}


def resource_columns(resources: Mapping[str, int]) -> dict[str, Any]:
    """The scalar columns the claim compares, derived from a resource requirement:
    one per standard key (0 when absent) and the custom keys' delimited string."""
    if not resources:
        return dict(_NO_RESOURCES)  # most jobs: what the code below derives from {}
    columns: dict[str, Any] = {key: int(resources.get(key, 0)) for key in STANDARD_KEYS}
    columns["custom_keys"] = encode_custom_keys(custom_keys_of(resources))
    return columns


def prepare(job: Job, max_payload_bytes: int | None = None) -> Job:
    """Validate a new job and fill the columns derived from its resources.
    ``max_payload_bytes`` defaults to the setting (read once per batch by callers
    that prepare many: a settings read costs more than the check). Every bound is
    the one ``dispatch_jobs.limits`` declares, so nothing fails at INSERT."""
    cap = settings.max_payload_bytes if max_payload_bytes is None else max_payload_bytes
    if job.pk is not None:
        raise InvalidJob(f"Job {job.pk} already exists; enqueue only new jobs.")
    if not isinstance(job.name, str) or not job.name or len(job.name) > NAME_MAX:
        raise InvalidJob(f"Job name must be a non-empty string of at most {NAME_MAX} chars.")
    if not limits.is_queue_name(job.queue):
        raise InvalidJob(
            f"Queue of {job.name!r} must be a string of {limits.QUEUE_NAME_RULE}, "
            f"got {job.queue!r}."
        )
    _check_texts(job)
    for name in ("priority", "max_retries"):
        value = getattr(job, name)
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidJob(f"{name} of {job.name!r} must be an integer, got {value!r}.")
        if not limits.INT32_MIN <= value <= limits.INT32_MAX:
            raise InvalidJob(f"{name} of {job.name!r} does not fit a 32-bit column: {value}.")
    if job.max_retries < 0:
        raise InvalidJob(f"max_retries of {job.name!r} must be >= 0, got {job.max_retries}.")
    _check_times(job)
    found = locate_unstorable(job.payload, max_items=cap, root="payload", json_only=True)
    if found:
        raise InvalidJob(f"Payload of {job.name!r} cannot be stored: {found.sentence()}.")
    size = payload_size(job.name, job.payload)
    if size > cap:
        raise PayloadTooLarge(job.name, size, cap)
    derive_resource_columns(job)
    job.state = JobState.PENDING
    return job


def derive_resource_columns(job: Job) -> None:
    """Check ``job.resources`` and set the claim's scalar columns from it. Every
    write that stores ``resources`` (enqueue, ``update_job``, ``update_leased_job``)
    goes through here, so the columns the claim compares never disagree with the
    requirement they are derived from."""
    resources = job.resources or {}
    if not isinstance(resources, Mapping):
        raise InvalidJob(
            f"Resources of {job.name!r} must be a mapping of canonical amounts, "
            f"got {type(resources).__name__}."
        )
    try:
        for key, amount in resources.items():
            check_quantity(key, amount)
        check_custom_key_count(resources)
        columns = resource_columns(resources)
    except InvalidResources as exc:
        raise InvalidJob(f"Resources of {job.name!r}: {exc}") from exc
    for attname, value in columns.items():
        setattr(job, attname, value)


def _check_texts(job: Job) -> None:
    for attname in ("name", "queue", "scope_app_id", "scope_org_id", "resource_class"):
        value = getattr(job, attname)
        problem = check_storable_text(value) if isinstance(value, str) else None
        if problem:
            raise InvalidJob(f"{attname} of job {job.name!r}: {value[:40]!r} {problem}.")


def _check_times(job: Job) -> None:
    for attname in ("timeout", "lease_ttl"):
        value = getattr(job, attname)
        if value is None:
            continue
        low, high = limits.duration_bounds(attname)
        try:
            limits.to_duration(value, f"{attname} of {job.name!r}", low=low, high=high)
        except InvalidDuration as exc:
            raise InvalidJob(str(exc)) from exc
    run_at = job.run_at
    if isinstance(run_at, datetime) and not limits.is_storable_time(run_at):
        first, last = limits.RUN_AFTER_MIN.date(), limits.RUN_AFTER_MAX.date()
        raise InvalidJob(f"run_at of {job.name!r} is outside {first}..{last}: {run_at}.")


def enqueue_job(job: Job) -> Job:
    """Persist one new job in the pending state and return it with its id."""
    prepare(job)
    return _persist(db.alias(), [job], many=False)[0]


def enqueue_jobs(jobs: Sequence[Job]) -> list[Job]:
    """Persist many new jobs in one INSERT; all are validated before any is written."""
    cap = settings.max_payload_bytes
    prepared = [prepare(job, cap) for job in jobs]
    if not prepared:
        return []
    return _persist(db.alias(), prepared, many=True)


def insert_jobs(new: NewJobs, returning: tuple[str, ...] = NEW_ROW) -> list[tuple[Any, ...]]:
    """Write new pending rows in one INSERT; returns the ``returning`` attnames'
    values of each row, in row order.

    The caller has validated every value: this is the tasks backend's door, and
    its checks (task options at definition, arguments at enqueue) cover
    everything ``prepare`` checks, so nothing is checked twice per row.
    """
    if not new.size:
        return []
    # Enqueue writes pending jobs, whatever the caller's columns say.
    new = NewJobs(new.size, {**new.shared, "state": JobState.PENDING}, new.own)
    alias = db.alias()
    if connections[alias].vendor == "postgresql":
        # One statement is atomic on its own: no transaction of ours needed (and,
        # inside the caller's, the statement brings its own savepoint).
        return _insert_postgresql(alias, new, returning)
    with _savepoint(alias):
        saved = _save(alias, _orm_jobs(new), many=new.size > 1)
    return [tuple(getattr(job, attname) for attname in returning) for job in saved]


def _savepoint(alias: str) -> AbstractContextManager[object]:
    """Inside the caller's transaction, a savepoint around the ORM's INSERT:
    should the database still refuse a row that validation let through, the error
    reaches the caller and their transaction stays usable (the ORM marks the whole
    atomic block for rollback when a save fails in it). In autocommit the INSERT is
    its own transaction and needs none."""
    if connections[alias].in_atomic_block:
        return transaction.atomic(using=alias)
    return nullcontext()


def _persist(alias: str, jobs: list[Job], *, many: bool) -> list[Job]:
    """Write prepared ``Job`` instances and give them what the database assigned."""
    if connections[alias].vendor != "postgresql":
        return _save(alias, jobs, many=many)
    table = _table(alias)
    rows = _insert_postgresql(alias, _columns_of(table, jobs), table.returning)
    for job, row in zip(jobs, rows, strict=True):
        for attname, value in zip(table.returning, row, strict=True):
            setattr(job, attname, value)
        job._state.adding = False
        job._state.db = alias
    return jobs


def _save(alias: str, jobs: list[Job], *, many: bool) -> list[Job]:
    """The ORM's insert, on the databases without the PostgreSQL statement."""
    if many:
        with transaction.atomic(using=alias):
            jobs = Job.objects.using(alias).bulk_create(jobs)
    else:
        jobs[0].save(using=alias, force_insert=True)
    _notify_enqueued(jobs)
    return jobs


def _orm_jobs(new: NewJobs) -> list[Job]:
    """Model instances of new rows, for the ORM's insert."""
    shared = {attname: _python(value) for attname, value in new.shared.items()}
    return [
        _new_job({**shared, **{attname: _python(v[i]) for attname, v in new.own.items()}})
        for i in range(new.size)
    ]


def _python(value: object) -> object:
    return value.value if isinstance(value, EncodedJSON) else value


def _new_job(values: Mapping[str, Any]) -> Job:
    """``Job(**values)`` through the model's positional constructor, which skips
    the keyword path's per-field lookups: several times cheaper per row."""
    row = [
        values[name] if name in values else (make() if make else constant)
        for name, make, constant in _layout()
    ]
    # cast: the stubs type the constructor's keyword form only.
    return cast(Any, Job)(*row)


@functools.cache
def _layout() -> tuple[tuple[str, Callable[[], Any] | None, Any], ...]:
    """(attname, default factory, constant default) per concrete field of Job, in
    constructor order. A callable default (dict, list) is called per row, as the
    model does; any other default is the same value every time, so it is read
    once (the model hands out the same object too)."""
    return tuple(
        (f.attname, f.default, None)
        if f.has_default() and callable(f.default)
        else (f.attname, None, f.get_default())
        for f in Job._meta.concrete_fields
    )


# --- PostgreSQL: one lean INSERT ... RETURNING


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
    by_attname: Mapping[str, _Column]
    # Statement text per shape of NewJobs: built once, so an insert only binds.
    statements: dict[tuple[Any, ...], str] = field(default_factory=dict)


_TABLES: dict[str, _Table] = {}
_NO_DEFAULT = object()
# Shapes kept per table; past it the cache starts over (a bound, not a tuning knob).
_MAX_SHAPES = 256
# The row count's parameter: "__" cannot occur in a field's name.
_COUNT = "__count"


def _insert_postgresql(
    alias: str, new: NewJobs, returning: tuple[str, ...]
) -> list[tuple[Any, ...]]:
    """The PostgreSQL hot path: one lean INSERT ... RETURNING for one or many rows.

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
    table = _table(alias)
    shared, own = new.shared, new.own
    if new.size == 1 and own:
        # One row: every value is shared, and no set-returning function is needed.
        shared = {**shared, **{attname: values[0] for attname, values in own.items()}}
        own = {}
    params = _parameters(table, shared)
    # notify_enabled() without its vendor check: this is the PostgreSQL path.
    notify = settings.notify
    shape = (tuple(params), tuple(own), new.size > 1, returning, notify)
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
    with connection.cursor() as cursor:
        if connection.in_atomic_block and _binds_client_side(connection):
            _execute_in_savepoint(cursor, sql, params)
        else:
            cursor.execute(sql, params)
        rows = cursor.fetchall()
    # Ids are drawn in row order (the SELECT is ordered by input position), so
    # sorted ids map back onto the input order.
    rows.sort()
    if notify:
        width = len(returning)
        return [row[:width] for row in rows]
    return rows


# The savepoint an INSERT in the caller's transaction runs in (see below).
_SAVEPOINT = "dispatch_jobs_enqueue"


def _binds_client_side(connection: Any) -> bool:
    """Whether the connection's cursors bind parameters client-side (Django's
    default for psycopg 3), which lets one execute() carry several statements."""
    return not connection.settings_dict.get("OPTIONS", {}).get("server_side_binding")


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


def _statement(
    table: _Table,
    shared: tuple[str, ...],
    own: tuple[str, ...],
    many: bool,
    returning: tuple[str, ...],
    notify: bool,
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
    channel = "'" + CHANNEL.replace("'", "''") + "'"
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
    )


def _inline(sql: str) -> str:
    """Text placed in a statement that has %(name)s parameters: % doubled."""
    return sql.replace("%", "%%")


def _notify_enqueued(jobs: Sequence[Job]) -> None:
    """Wake idle workers on PostgreSQL: one NOTIFY per queue, delivered at commit.
    (The PostgreSQL insert path sends its notifications in the INSERT itself.)"""
    from .notify import notify_queues

    notify_queues(job.queue for job in jobs)
