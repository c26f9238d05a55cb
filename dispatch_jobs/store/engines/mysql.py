"""MySQL and MariaDB: the claim in steps (InnoDB locks what it reads);
completion row by row; the ORM's insert; sessions in UTC. No notifications:
workers poll."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from datetime import timedelta
from typing import Any

from django.db import OperationalError, connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Expression, Func, Q, TextField
from django.db.models.functions import Now

from ...conf import settings
from ...models import READY_STATES, Job
from .. import db
from ..options import ClaimOptions
from ..rows import NewJobs
from ..selection import claim_changes, eligible, fit_predicate, suspect_predicate
from ..transitions import Settled
from . import portable

# Error codes that refuse a statement for what it carries, though the driver
# raises some as OperationalError: incorrect string value, data too long, out of
# range, incorrect datetime, datetime or integer overflow, truncated, invalid
# JSON, NULL in a NOT NULL column, a failed CHECK constraint, a packet over
# max_allowed_packet.
REFUSALS = frozenset({1048, 1153, 1264, 1265, 1292, 1366, 1406, 1441, 1916, 3140, 4025})


class _Binary(Func):
    """Text compared byte for byte: a binary cast sets the collation aside."""

    template = "CAST(%(expressions)s AS BINARY)"
    output_field = TextField()


class MySQL:
    vendor = "mysql"
    # No partial indexes; InnoDB writes a secondary index only when one of its
    # columns changes, so a claim leaves the filter indexes alone anyway.
    finished_apart = False
    notifies = False  # workers poll

    def claim(self, opts: ClaimOptions) -> list[Job]:
        """Choose candidates in claim order without locking, lock exactly the rows
        to take (``_lock_ready``), mark them running, read them back, all in one
        transaction.

        InnoDB's locking read locks every row it reads, and a claim's ORDER BY is
        not an index order (two ready states, several queues, preferred hashes):
        a ``SELECT ... ORDER BY ... LIMIT n FOR UPDATE SKIP LOCKED`` reads, and
        locks, every ready row of the queues before sorting, so a second claimer
        skips them all and gets nothing. Instead a plain read (no lock) lists
        candidates in claim order, a few more than needed (the spares spare a
        second sort when another claimer holds the head), and the candidates are
        locked in that order, never more at once than are still needed: the rows
        taken are the first ones of the order that nobody else holds, as with one
        locking read. (MariaDB's RETURNING covers INSERT and DELETE only.)
        """
        alias = db.alias()
        with transaction.atomic(using=alias):
            taken: list[int] = []
            seen: list[int] = []
            while len(taken) < opts.limit:
                need = opts.limit - len(taken)
                candidates = list(
                    eligible(opts).exclude(id__in=seen).values_list("id", flat=True)[: 2 * need]
                )
                if not candidates:
                    break
                seen += candidates
                while candidates and len(taken) < opts.limit:
                    chunk = candidates[: opts.limit - len(taken)]
                    del candidates[: len(chunk)]
                    taken += _lock_ready(opts, chunk)
            if not taken:
                return []
            Job.objects.using(alias).filter(id__in=taken).update(**claim_changes(opts))
            return self.read(taken)

    def read(self, ids: Sequence[int]) -> list[Job]:
        return portable.read_jobs(ids)

    def complete(self, worker_id: str, settled: Sequence[Settled]) -> set[int]:
        return portable.complete_row_by_row(worker_id, settled)

    def insert(self, new: NewJobs, returning: tuple[str, ...]) -> list[tuple[Any, ...]]:
        return portable.orm_insert(new, returning)

    def persist(self, jobs: list[Job], *, many: bool) -> list[Job]:
        return portable.orm_persist(jobs, many=many)

    def notify(self, queues: Sequence[str]) -> None:
        pass

    @contextlib.contextmanager
    def statement_timeout(self, timeout: timedelta) -> Iterator[None]:
        yield  # MariaDB's max_statement_time would abort a transaction's lock waits too

    def exact_text(self, expression: Expression) -> Expression:
        """Compared by collation, text is case-insensitive here; cast, byte-exact."""
        return _Binary(expression)

    def refuses_content(self, exc: BaseException) -> bool:
        if portable.refused_for_values(exc):
            return True
        code = exc.args[0] if exc.args else None
        return isinstance(exc, OperationalError) and code in REFUSALS

    def connected(self, connection: BaseDatabaseWrapper) -> None:
        """Run sessions of the jobs database in UTC.

        Django stores aware datetimes here as naive UTC, but ``NOW()`` and
        ``CURRENT_TIMESTAMP`` (``Now()``, the models' ``db_default``) answer in
        the session's time zone, which defaults to the server's. On a server not
        running in UTC every readiness and expiry comparison would be off by the
        offset: a job due now would wait hours, or a live lease look expired.
        Skipped when the database's TIME_ZONE setting makes Django store local
        times instead."""
        if connection.alias != settings.database or connection.timezone_name != "UTC":
            return
        with connection.cursor() as cursor:
            cursor.execute("SET time_zone = '+00:00'")


def _lock_ready(opts: ClaimOptions, chosen: list[int]) -> list[int]:
    """Lock the ``chosen`` rows that nobody else holds and that still qualify;
    their ids.

    The rows are read through the primary key alone (forced: on a small table
    the optimizer would rather scan the whole ready index, locking every row in
    it); readiness, queue, quarantine and fit are tested again on the latest
    version, locked, and under READ COMMITTED (Django's default) a row that no
    longer qualifies is unlocked at once. The paused-queue test stays in the plain
    read: in a locking read its sub-select would lock, and skip, rows of the
    queue table.
    """
    aliases, fit = fit_predicate(opts)
    queues = Q() if opts.every_queue else Q(queue__in=list(opts.queues))
    locking = (
        Job.objects.using(db.alias())
        .filter(queues, id__in=chosen, state__in=READY_STATES)
        .filter(run_at__lte=Now())
        .filter(suspect_predicate(opts))
        .alias(**aliases)
        .filter(fit)
        .order_by()
        .select_for_update(skip_locked=True)
        .values_list("id", flat=True)
    )
    sql, params = locking.query.get_compiler(db.alias()).as_sql()
    table = connections[db.alias()].ops.quote_name(Job._meta.db_table)
    by_key = sql.replace(f"FROM {table} ", f"FROM {table} FORCE INDEX (PRIMARY) ", 1)
    assert by_key != sql, sql
    with connections[db.alias()].cursor() as cursor:
        cursor.execute(by_key, params)
        return [row[0] for row in cursor.fetchall()]
