"""What several engines share: the claim as one ``UPDATE ... RETURNING``
(PostgreSQL, SQLite), completion row by row and the ORM's insert (SQLite,
MySQL/MariaDB). Each engine composes these with its own statements."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any, cast

from django.db import DataError, IntegrityError, connections, transaction
from django.db.models import Q
from django.db.models.functions import Now
from django.db.models.sql import UpdateQuery

from ...models import Job, Usage
from .. import db
from ..leases import fenced
from ..options import ClaimOptions
from ..rows import EncodedJSON, NewJobs
from ..selection import claim_changes, eligible
from ..transitions import OUTCOME_COLUMNS, Retry, Settled, usage_of
from .job_rows import jobs_from_rows


class ReturningClaims:
    """The claim as ONE ``UPDATE job SET <claim changes> WHERE <chosen> RETURNING
    *``, compiled once per (alias, options) and kept: a worker repeats the same
    few claims thousands of times, and compiling the ORM query costs more than
    the database needs to run it. ``chosen`` says how the engine picks (and
    locks) the rows. Bounded: cleared when full (budgets can vary)."""

    MAX = 256

    def __init__(
        self,
        chosen: Callable[[str, tuple[Any, ...]], Q],
        prepared: Callable[[Any], Any | None] | None = None,
        fetch: Callable[[Any], tuple[list[Any], bool]] | None = None,
        *,
        undeclared: bool = False,
    ) -> None:
        self.chosen = chosen
        # Return each column as an expression (``+col``, a no-op in SQLite) rather
        # than the column: sqlite3 converts a column by its declared type while it
        # fetches, where one value it cannot convert fails the fetch of every row,
        # and an expression has no declared type. Django's converters then convert
        # the values, row by row where one fails (``jobs_from_rows``).
        self.undeclared = undeclared
        # The rows a claim returned, and whether they were read apart (a value
        # the driver could not load is then ``job_rows.Unreadable``).
        self.fetch = fetch or _fetch_all
        # The engine's prepared cursor for a connection, or None where the alias
        # prepares nothing (see PostgreSQL's engine).
        self.prepared = prepared
        self.statements: dict[tuple[Any, ...], tuple[str, tuple[Any, ...]]] = {}
        self.literals: dict[tuple[Any, ...], str] = {}

    def run(self, opts: ClaimOptions) -> list[Job]:
        alias = db.alias()
        connection = connections[alias]
        cursor = self.prepared(connection) if self.prepared is not None else None
        if cursor is None:
            sql, params = self.statement(alias, opts)
            with connection.cursor() as cursor:
                cursor.execute(sql, params)
                rows, apart = self.fetch(cursor)
        else:
            with cursor:
                cursor.execute(self.literal(alias, opts))
                rows, apart = self.fetch(cursor)
        return jobs_from_rows(alias, rows, apart=apart)

    def literal(self, alias: str, opts: ClaimOptions) -> str:
        """The claim with its parameters written into the text, for a prepared
        statement: with none left, PostgreSQL plans it once and keeps that plan,
        which still matches the partial indexes' conditions (a plan made for
        parameters could not know that ``state IN ($1, $2)`` meets them). The
        values are quoted by the driver, as client-side binding quotes them."""

        def compose() -> str:
            sql, params = self.statement(alias, opts)
            return str(cast(Any, connections[alias].ops).compose_sql(sql, params))

        return _kept(self.literals, self._key(alias, opts), self.MAX, compose)

    def statement(self, alias: str, opts: ClaimOptions) -> tuple[str, tuple[Any, ...]]:
        return _kept(
            self.statements, self._key(alias, opts), self.MAX, lambda: self._compile(alias, opts)
        )

    @staticmethod
    def _key(alias: str, opts: ClaimOptions) -> tuple[Any, ...]:
        budget = None if opts.budget is None else tuple(sorted(opts.budget.items()))
        return (
            alias,
            tuple(opts.queues),
            opts.every_queue,
            opts.limit,
            budget,
            tuple(opts.custom_keys),
            tuple(opts.prefer_hashes),
            opts.reserved_for,
            opts.worker_id,
            opts.lease_ttl,
            opts.suspects,
            opts.alone,
            opts.limits_held,
            tuple(opts.exclude_orgs),
            None if opts.executions is None else tuple(opts.executions),
            tuple(opts.skip),
        )

    def _compile(self, alias: str, opts: ClaimOptions) -> tuple[str, tuple[Any, ...]]:
        connection = connections[alias]
        candidates = eligible(opts).values_list("id", flat=True)[: opts.limit]
        select_sql, select_params = candidates.query.get_compiler(alias).as_sql()
        query = UpdateQuery(Job)
        query.add_update_values(claim_changes(opts))
        query.add_q(self.chosen(select_sql, tuple(select_params)))
        sql, params = query.get_compiler(alias).as_sql()
        return f"{sql} RETURNING {_columns(connection, self.undeclared)}", tuple(params)


def _columns(connection: Any, undeclared: bool) -> str:
    """Every concrete column of the job table, in field order (what
    ``jobs_from_rows`` reads), each as ``+col`` when ``undeclared``."""
    quote = connection.ops.quote_name
    plus = "+" if undeclared else ""
    return ", ".join(plus + quote(str(f.column)) for f in Job._meta.concrete_fields)


def _fetch_all(cursor: Any) -> tuple[list[Any], bool]:
    return cursor.fetchall(), False


def read_jobs(
    ids: Sequence[int],
    *,
    undeclared: bool = False,
    fetch: Callable[[Any], tuple[list[Any], bool]] = _fetch_all,
) -> list[Job]:
    """``Engine.read``: one SELECT of every column, read as the claim reads its
    rows (``undeclared`` and ``fetch`` as in ``ReturningClaims``)."""
    if not ids:
        return []
    alias = db.alias()
    connection = connections[alias]
    quote = connection.ops.quote_name
    marks = ", ".join(["%s"] * len(ids))
    key = quote("id")
    sql = (
        f"SELECT {_columns(connection, undeclared)} FROM {quote(Job._meta.db_table)} "
        f"WHERE {key} IN ({marks}) ORDER BY {key}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, list(ids))
        rows, apart = fetch(cursor)
    return jobs_from_rows(alias, rows, apart=apart)


def _kept[K, V](cache: dict[K, V], key: K, bound: int, make: Callable[[], V]) -> V:
    """``cache[key]``, made by ``make`` when missing; the cache starts over once it
    holds ``bound`` entries (a bound, not a tuning knob)."""
    found = cache.get(key)
    if found is None:
        if len(cache) >= bound:
            cache.clear()
        found = cache[key] = make()
    return found


# --- completion, one fenced UPDATE per job


def complete_row_by_row(worker_id: str, ordered: Sequence[Settled]) -> set[int]:
    """One fenced UPDATE per job and the usage rows, in one transaction."""
    alias = db.alias()
    jobs = Job.objects.using(alias)
    lost: set[int] = set()
    with transaction.atomic(using=alias):
        # Lock the rows first, in id order: a heartbeat renewing some of the same
        # leases then waits for this batch instead of deadlocking with it.
        ids = [s.job_id for s in ordered]
        list(jobs.filter(id__in=ids).order_by("id").select_for_update().values_list("id"))
        for settled in ordered:
            if not fenced(settled.job_id, worker_id, settled.epoch).update(**_row_values(settled)):
                lost.add(settled.job_id)
        usages = [
            usage_of(s, worker_id) for s in ordered if s.spent is not None and s.job_id not in lost
        ]
        if usages:
            Usage.objects.using(alias).bulk_create(usages)
    return lost


def _row_values(settled: Settled) -> dict[str, object]:
    values: dict[str, object] = settled.values()
    assert tuple(values) == OUTCOME_COLUMNS
    values["updated_at"] = Now()
    if settled.finishes:
        values["completed_at"] = Now()
    if isinstance(settled.transition, Retry):
        values["run_at"] = db.now_plus(settled.transition.delay)
    return values


# --- the ORM's insert


def orm_insert(new: NewJobs, returning: tuple[str, ...]) -> list[tuple[Any, ...]]:
    alias = db.alias()
    with savepoint(alias):
        saved = orm_persist(_orm_jobs(new), many=new.size > 1)
    return [tuple(getattr(job, attname) for attname in returning) for job in saved]


def orm_persist(jobs: list[Job], *, many: bool) -> list[Job]:
    alias = db.alias()
    if many:
        with transaction.atomic(using=alias):
            return Job.objects.using(alias).bulk_create(jobs)
    jobs[0].save(using=alias, force_insert=True)
    return jobs


def savepoint(alias: str) -> AbstractContextManager[object]:
    """Inside the caller's transaction, a savepoint around the ORM's INSERT:
    should the database still refuse a row that validation let through, the error
    reaches the caller and their transaction stays usable (the ORM marks the whole
    atomic block for rollback when a save fails in it). In autocommit the INSERT is
    its own transaction and needs none."""
    if connections[alias].in_atomic_block:
        return transaction.atomic(using=alias)
    return nullcontext()


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


def refused_for_values(exc: BaseException) -> bool:
    """The errors every database (or its driver) raises for a statement's values:
    retrying the same values cannot help, but the same rows written apart can."""
    return isinstance(exc, (DataError, IntegrityError, UnicodeError, ValueError, TypeError))
