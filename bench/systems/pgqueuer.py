"""PgQueuer: an asyncio PostgreSQL job queue with its own worker CLI (``pgq``).

Enqueue: ``Queries.enqueue`` over an asyncpg connection (the documented
producer), scalars for one job, lists for a batch. Schema: ``pgq install``
(its default durability, ``durable``). Worker: ``pgq run`` with a factory.
Tuned: ``--batch-size 100`` (default 10). Its log table records ``queued``,
``picked`` and ``successful`` with the database's clock.
"""

from __future__ import annotations

import asyncio
import subprocess
from typing import Any

from ..databases import fresh_database, libpq_dsn
from ..measure import timed_rate
from .base import System, Unsupported
from .pg_probe import PgProbe

FACTORY = "bench.systems.pgqueuer_app:main"
FILL_CHUNK = 5_000


class PgQueuer(System):
    name = "pgqueuer"
    modes = {
        "default": "pgq run --mode drain (batch size 10, its default)",
        "tuned": "pgq run --mode drain --batch-size 100",
        "serve": "pgq run (LISTEN/NOTIFY, batch size 10)",
        "c32": "pgq run --max-concurrent-tasks 32",
        "poll": "n/a: PgQueuer always LISTENs (polling is only its fallback)",
    }

    def __init__(self, vendor: str) -> None:
        super().__init__(vendor)
        self.dsn = libpq_dsn(self.url)
        self.probe = PgProbe(self.url)
        self.loop = asyncio.new_event_loop()
        self._conn: Any = None
        self._queries: Any = None

    def _run(self, coro):  # type: ignore[no-untyped-def]
        return self.loop.run_until_complete(coro)

    def prepare(self) -> None:
        self.close()
        fresh_database(self.url)
        subprocess.run(
            [self.bin("pgq"), "--pg-dsn", self.dsn, "install"],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        import asyncpg
        from pgqueuer.db import AsyncpgDriver
        from pgqueuer.queries import Queries

        self._conn = self._run(asyncpg.connect(self.dsn))
        self._queries = Queries(AsyncpgDriver(self._conn))

    def close(self) -> None:
        self.probe.close()
        if self._conn is not None:
            self._run(self._conn.close())
            self._conn = None

    def _enqueue_many(self, count: int) -> None:
        self._run(self._queries.enqueue(["noop"] * count, [None] * count, [0] * count))

    def enqueue_single(self, count: int) -> dict[str, float]:
        async def run() -> None:
            for _ in range(count):
                await self._queries.enqueue("noop", None, 0)

        return {"rate": timed_rate(count, lambda: self._run(run()))}

    def enqueue_bulk(self, count: int, batch: int) -> dict[str, float]:
        def run() -> None:
            for start in range(0, count, batch):
                self._enqueue_many(min(batch, count - start))

        return {"rate": timed_rate(count, run)}

    def fill(self, count: int) -> None:
        for start in range(0, count, FILL_CHUNK):
            self._enqueue_many(min(FILL_CHUNK, count - start))

    def enqueue_one(self) -> None:
        self._run(self._queries.enqueue("noop", None, 0))

    def worker_argv(self, mode: str) -> list[str]:
        if mode == "poll":
            raise Unsupported("PgQueuer has no switch to turn LISTEN/NOTIFY off")
        argv = [self.bin("pgq"), "--pg-dsn", self.dsn, "run", FACTORY]
        if mode in ("default", "tuned"):
            argv += ["--mode", "drain"]
        if mode == "tuned":
            argv += ["--batch-size", "100"]
        elif mode == "c32":
            argv += ["--max-concurrent-tasks", "32"]
        return argv

    def worker_env(self, mode: str) -> dict[str, str]:
        env = super().worker_env(mode)
        env["BENCH_PG_DSN"] = self.dsn
        return env

    def _log_count(self, status: str) -> int:
        return int(
            self.probe.scalar("SELECT count(*) FROM pgqueuer_log WHERE status = %s", (status,))
        )

    def finished(self) -> int:
        return self._log_count("successful")

    def failed(self) -> int:
        return self._log_count("exception") + self._log_count("failed")

    def finish_span(self) -> tuple[float, float] | None:
        row = self.probe.rows(
            "SELECT extract(epoch FROM min(created))::float8, "
            "extract(epoch FROM max(created))::float8 "
            "FROM pgqueuer_log WHERE status = 'successful'"
        )[0]
        return None if row[0] is None else (row[0], row[1])

    def latencies(self) -> list[float]:
        rows = self.probe.rows(
            "SELECT extract(epoch FROM p.created - q.created)::float8 FROM pgqueuer_log q "
            "JOIN pgqueuer_log p ON p.job_id = q.job_id AND p.status = 'picked' "
            "WHERE q.status = 'queued' ORDER BY q.job_id"
        )
        return [row[0] for row in rows]


SYSTEM = PgQueuer
