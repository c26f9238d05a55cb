"""SQLite: the claim as one ``UPDATE ... RETURNING`` in an IMMEDIATE
transaction; completion row by row; the ORM's insert. No notifications: workers
poll."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Expression, Q
from django.db.models.expressions import RawSQL

from ...models import Job
from .. import db
from ..options import ClaimOptions
from ..rows import NewJobs
from ..transitions import Settled
from . import portable


class SQLite:
    vendor = "sqlite"
    # Whole indexes: Django cannot read two sliced parts in one statement here.
    finished_apart = False
    notifies = False  # workers poll

    def __init__(self) -> None:
        self.claims = portable.ReturningClaims(self._chosen, undeclared=True)

    def claim(self, opts: ClaimOptions) -> list[Job]:
        """``UPDATE ... WHERE id IN (SELECT ... LIMIT n) RETURNING *`` inside a
        transaction that is IMMEDIATE (the jobs database's required
        ``transaction_mode``): it takes the database's write lock at BEGIN, so no
        other writer can claim between the read and the write."""
        with transaction.atomic(using=db.alias()):
            return self.claims.run(opts)

    def read(self, ids: Sequence[int]) -> list[Job]:
        return portable.read_jobs(ids, undeclared=True)

    @staticmethod
    def _chosen(select_sql: str, params: tuple[Any, ...]) -> Q:
        return Q(id__in=RawSQL(select_sql, params))

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
        yield  # SQLite has none; its queries here are bounded by their own LIMITs

    def exact_text(self, expression: Expression) -> Expression:
        return expression  # = compares bytes (BINARY collation)

    def refuses_content(self, exc: BaseException) -> bool:
        return portable.refused_for_values(exc)

    def connected(self, connection: BaseDatabaseWrapper) -> None:
        pass
