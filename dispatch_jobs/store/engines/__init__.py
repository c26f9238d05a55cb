"""The store's engines: one per database, behind one small protocol.

Every verb of the store that must be written differently per database asks the
engine of the jobs database for it; nothing else in the store tests a vendor.
The portable part of a claim (what is ready, what fits, what a claim writes) is
``store.selection``; what an outcome writes is ``store.transitions``; how each
database runs them, with its own statements and statement caches, is here:

- ``postgresql``: one statement per claim, per completion batch and per insert.
- ``sqlite``: the claim as one ``UPDATE ... RETURNING`` in the IMMEDIATE
  transaction; completion row by row; the ORM's insert.
- ``mysql`` (MySQL and MariaDB): the claim in steps (InnoDB locks what it
  reads); completion row by row; the ORM's insert; sessions in UTC.

Adding a verb means adding it to ``Engine`` and to each engine, nowhere else.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Protocol

from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Expression

if TYPE_CHECKING:
    from ...models import Job
    from ..options import ClaimOptions
    from ..rows import NewJobs
    from ..transitions import Settled


class Engine(Protocol):
    """What the store needs of a database, verb by verb."""

    vendor: str
    # Whether the job table's filter indexes hold finished rows only (migration
    # 0015), so that a list reads live and finished rows apart, each part under
    # a condition its indexes serve (``store.reads.first_rows``).
    finished_apart: bool

    @property
    def notifies(self) -> bool:
        """LISTEN/NOTIFY: enqueue wakes idle workers without waiting for their poll."""
        ...

    def claim(self, opts: ClaimOptions) -> list[Job]:
        """Select, lock, mark running (and lease) up to ``opts.limit`` ready jobs
        that fit, in one transaction; any order (``claim_jobs`` sorts)."""
        ...

    def read(self, ids: Sequence[int]) -> list[Job]:
        """The whole rows of these jobs, in id order, read as a claim reads them:
        a value that cannot be converted is None in its job, named in the job's
        ``undecodable``, and never fails the rows beside it."""
        ...

    def complete(self, worker_id: str, settled: Sequence[Settled]) -> set[int]:
        """Write fenced outcomes (sorted by id) and the usage of each written one,
        in one transaction; the ids whose fence failed."""
        ...

    def insert(self, new: NewJobs, returning: tuple[str, ...]) -> list[tuple[Any, ...]]:
        """Write new rows (validated) in one INSERT; ``returning``'s values per row."""
        ...

    def persist(self, jobs: list[Job], *, many: bool) -> list[Job]:
        """Write prepared ``Job`` instances; give them what the database assigned."""
        ...

    def notify(self, queues: Sequence[str]) -> None:
        """Wake the workers of ``queues`` when the current transaction commits."""
        ...

    def statement_timeout(self, timeout: timedelta) -> AbstractContextManager[None]:
        """Run the block's queries under ``timeout`` where the database can."""
        ...

    def exact_text(self, expression: Expression) -> Expression:
        """``expression`` compared byte for byte (not by collation)."""
        ...

    def refuses_content(self, exc: BaseException) -> bool:
        """Whether ``exc`` is the database refusing a statement for its values."""
        ...

    def connected(self, connection: BaseDatabaseWrapper) -> None:
        """Set up a new connection of the jobs database."""
        ...


_ENGINES: dict[str, Engine] = {}


def engine_for(alias: str) -> Engine:
    """The engine of the database behind ``alias`` (one instance per vendor)."""
    vendor = connections[alias].vendor
    found = _ENGINES.get(vendor)
    if found is None:
        found = _ENGINES[vendor] = _build(vendor)
    return found


def _build(vendor: str) -> Engine:
    if vendor == "postgresql":
        from .postgresql import PostgreSQL

        return PostgreSQL()
    if vendor == "sqlite":
        from .sqlite import SQLite

        return SQLite()
    if vendor == "mysql":
        from .mysql import MySQL

        return MySQL()
    from ...exceptions import UnsupportedDatabase

    raise UnsupportedDatabase(vendor)
