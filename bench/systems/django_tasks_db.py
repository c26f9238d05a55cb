"""django-tasks-db (RealOrangeOne): the ORM backend of the django-tasks project.

Enqueue: the standard ``task.enqueue()`` (it has no bulk enqueue). Worker:
``manage.py db_worker`` (one task per loop turn, one process, no concurrency
setting). Tuned: persistent database connections (``CONN_MAX_AGE = None``);
its worker otherwise opens a connection every loop turn.
"""

from __future__ import annotations

from django.db import transaction

from ..measure import timed_rate
from .base import Unsupported
from .django_based import DjangoSystem


class DjangoTasksDb(DjangoSystem):
    name = "django_tasks_db"
    modes = {
        "default": "db_worker --no-startup-delay --batch (CONN_MAX_AGE=0)",
        "tuned": "db_worker --no-startup-delay --batch, CONN_MAX_AGE=None (persistent connections)",
        "serve": "db_worker --no-startup-delay (polls every 1 s, its default)",
        "c32": "db_worker (no concurrency option: one task at a time)",
        "poll": "db_worker polls every --interval (1 s); it has no LISTEN/NOTIFY",
    }

    def _noop(self):  # type: ignore[no-untyped-def]
        from bench.django_project.tasks import noop

        return noop

    def enqueue_single(self, count: int) -> dict[str, float]:
        noop = self._noop()

        def run() -> None:
            for _ in range(count):
                noop.enqueue()

        return {"rate": timed_rate(count, run)}

    def enqueue_bulk(self, count: int, batch: int) -> dict[str, float]:
        raise Unsupported("django-tasks-db has no bulk enqueue")

    def fill(self, count: int) -> None:
        noop = self._noop()
        with transaction.atomic():
            for _ in range(count):
                noop.enqueue()

    def enqueue_one(self) -> None:
        self._noop().enqueue()

    def worker_argv(self, mode: str) -> list[str]:
        argv = self.manage("db_worker", "--no-startup-delay", "--queue-name", "default")
        if mode in ("default", "tuned"):
            argv.append("--batch")
        return argv

    def worker_env(self, mode: str) -> dict[str, str]:
        env = super().worker_env(mode)
        if mode == "tuned":
            env["BENCH_CONN_MAX_AGE"] = "none"
        return env

    def _results(self):  # type: ignore[no-untyped-def]
        from django_tasks_db.models import DBTaskResult

        return DBTaskResult.objects

    def finished(self) -> int:
        return self._results().filter(status="SUCCESSFUL").count()

    def failed(self) -> int:
        return self._results().filter(status="FAILED").count()

    def finish_span(self) -> tuple[float, float] | None:
        from django.db.models import Max, Min

        span = (
            self._results()
            .filter(status="SUCCESSFUL")
            .aggregate(first=Min("finished_at"), last=Max("finished_at"))
        )
        if span["first"] is None:
            return None
        return span["first"].timestamp(), span["last"].timestamp()

    def latencies(self) -> list[float]:
        rows = (
            self._results()
            .filter(started_at__isnull=False)
            .order_by("enqueued_at")
            .values_list("enqueued_at", "started_at")
        )
        return [(started - enqueued).total_seconds() for enqueued, started in rows]


SYSTEM = DjangoTasksDb
