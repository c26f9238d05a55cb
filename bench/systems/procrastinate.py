"""Procrastinate: an async PostgreSQL task queue with its own worker CLI.

Enqueue: ``task.defer()`` one at a time, ``task.batch_defer(...)`` in bulk
(the sync API, over the app's psycopg pool). Worker: ``procrastinate worker``.
Tuned: ``--concurrency 16`` (default 1). Timestamps come from its
``procrastinate_events`` table, written by its own triggers with the
database's clock.
"""

from __future__ import annotations

from ..databases import fresh_database, libpq_dsn
from ..measure import timed_rate
from .base import System
from .pg_probe import PgProbe

APP = "bench.systems.procrastinate_app.app"
FILL_CHUNK = 5_000


class Procrastinate(System):
    name = "procrastinate"
    modes = {
        "default": "procrastinate worker --queues default --one-shot (concurrency 1)",
        "tuned": "procrastinate worker --queues default --one-shot --concurrency 16",
        "serve": "procrastinate worker --queues default (LISTEN/NOTIFY, its default)",
        "c32": "procrastinate worker --queues default --concurrency 32",
        "poll": "procrastinate worker --no-listen-notify (polls every 5 s, its default)",
    }

    def __init__(self, vendor: str) -> None:
        super().__init__(vendor)
        import os

        os.environ["BENCH_PG_DSN"] = libpq_dsn(self.url)
        from . import procrastinate_app

        self.app = procrastinate_app.app
        self.noop = procrastinate_app.noop
        self.probe = PgProbe(self.url)
        self._open = False

    def prepare(self) -> None:
        self.close()
        fresh_database(self.url)
        self.app.open()
        self._open = True
        self.app.schema_manager.apply_schema()

    def close(self) -> None:
        self.probe.close()
        if self._open:
            self.app.close()
            self._open = False

    def enqueue_single(self, count: int) -> dict[str, float]:
        def run() -> None:
            for _ in range(count):
                self.noop.defer()

        return {"rate": timed_rate(count, run)}

    def enqueue_bulk(self, count: int, batch: int) -> dict[str, float]:
        def run() -> None:
            for start in range(0, count, batch):
                self.noop.batch_defer(*([{}] * min(batch, count - start)))

        return {"rate": timed_rate(count, run)}

    def fill(self, count: int) -> None:
        for start in range(0, count, FILL_CHUNK):
            self.noop.batch_defer(*([{}] * min(FILL_CHUNK, count - start)))

    def enqueue_one(self) -> None:
        self.noop.defer()

    def worker_argv(self, mode: str) -> list[str]:
        argv = [self.bin("procrastinate"), f"--app={APP}", "worker", "--queues=default"]
        if mode in ("default", "tuned"):
            argv.append("--one-shot")
        if mode == "tuned":
            argv.append("--concurrency=16")
        elif mode == "c32":
            argv.append("--concurrency=32")
        elif mode == "poll":
            argv.append("--no-listen-notify")
        return argv

    def worker_env(self, mode: str) -> dict[str, str]:
        env = super().worker_env(mode)
        env["BENCH_PG_DSN"] = libpq_dsn(self.url)
        return env

    def finished(self) -> int:
        return int(
            self.probe.scalar("SELECT count(*) FROM procrastinate_jobs WHERE status = 'succeeded'")
        )

    def failed(self) -> int:
        return int(
            self.probe.scalar("SELECT count(*) FROM procrastinate_jobs WHERE status = 'failed'")
        )

    def finish_span(self) -> tuple[float, float] | None:
        row = self.probe.rows(
            "SELECT extract(epoch FROM min(at))::float8, extract(epoch FROM max(at))::float8 "
            "FROM procrastinate_events WHERE type = 'succeeded'"
        )[0]
        return None if row[0] is None else (row[0], row[1])

    def latencies(self) -> list[float]:
        rows = self.probe.rows(
            "SELECT extract(epoch FROM s.at - d.at)::float8 FROM procrastinate_events d "
            "JOIN procrastinate_events s ON s.job_id = d.job_id AND s.type = 'started' "
            "WHERE d.type = 'deferred' ORDER BY d.job_id"
        )
        return [row[0] for row in rows]


SYSTEM = Procrastinate
