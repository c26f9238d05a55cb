"""The PgQueuer factory the bench's worker runs (``pgq run bench.systems.pgqueuer_app:main``).

The connection string comes from ``BENCH_PG_DSN``. PgQueuer 1.6 wants the
factory to be an async context manager that yields the ``PgQueuer``.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg
from pgqueuer import PgQueuer
from pgqueuer.db import AsyncpgDriver
from pgqueuer.models import Job


@asynccontextmanager
async def main() -> AsyncIterator[PgQueuer]:
    connection = await asyncpg.connect(os.environ["BENCH_PG_DSN"])
    pgq = PgQueuer(AsyncpgDriver(connection))

    @pgq.entrypoint("noop")
    async def noop(job: Job) -> None:
        """Do nothing: the bench measures the queue, not the job."""

    try:
        yield pgq
    finally:
        await connection.close()
