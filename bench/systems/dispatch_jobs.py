"""dispatch_jobs, from this repository (installed editable into its own venv).

Enqueue is measured two ways where both exist: ``rate_store`` through
``dispatch_jobs.store.enqueue_job(s)`` with ``Job`` instances, and ``rate``
through the public tasks API (``task.enqueue()``) once the tasks backend
exists; until then ``rate`` is the store figure (see ``notes``). Worker:
``manage.py runjobs``.
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import timedelta
from typing import TYPE_CHECKING

from ..measure import BenchError, timed_rate
from .base import Unsupported
from .django_based import DjangoSystem

if TYPE_CHECKING:
    from dispatch_jobs.models import Job

TASK_NAME = "bench.django_project.tasks.noop"
FILL_CHUNK = 5_000
# The tuned drain, for no-op jobs: few executor threads (each switch between
# threads costs more than a no-op job), a deep prefetch so each claim takes
# hundreds of jobs, and no per-job log lines. Override with BENCH_DJ_TUNED_ARGS.
TUNED_ARGS = os.environ.get("BENCH_DJ_TUNED_ARGS", "--verbosity 0 --concurrency 2 --prefetch 1000")


def _exists(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a parent package is missing
        return False


def has_backend() -> bool:
    return _exists("dispatch_jobs.backend")


def has_worker() -> bool:
    return _exists("dispatch_jobs.management.commands.runjobs")


def has_admin() -> bool:
    return _exists("dispatch_jobs.admin")


class DispatchJobs(DjangoSystem):
    name = "dispatch_jobs"
    vendors = ("postgres", "sqlite", "mysql")
    modes = {
        "default": "runjobs --burst --queue default (its default concurrency, 4)",
        "tuned": "runjobs --burst --queue default " + TUNED_ARGS,
        "serve": "runjobs --queue default (defaults; LISTEN/NOTIFY on PostgreSQL)",
        "poll": (
            "runjobs --queue default, DISPATCH_JOBS['NOTIFY'] = False "
            "(polls 1 s, backing off to 5 s)"
        ),
        "c32": "runjobs --queue default --concurrency 32",
    }

    def notes(self) -> dict[str, str]:
        return {
            "enqueue_api": (
                "task.enqueue() / task.enqueue_many()"
                if has_backend()
                else "store.enqueue_job(s) (no tasks backend yet)"
            ),
            "worker": "runjobs" if has_worker() else "missing (drain scenarios skipped)",
            "admin": "present" if has_admin() else "missing (admin scenario skipped)",
        }

    # -- enqueue --------------------------------------------------------------

    def _job(self):  # type: ignore[no-untyped-def]
        from dispatch_jobs.models import Job

        return Job(name=TASK_NAME, queue="default", payload={"args": [], "kwargs": {}})

    def _noop(self):  # type: ignore[no-untyped-def]
        from bench.django_project.tasks import noop

        return noop

    def enqueue_single(self, count: int) -> dict[str, float]:
        from dispatch_jobs.store import enqueue_job

        def store() -> None:
            for _ in range(count):
                enqueue_job(self._job())

        metrics = {"rate_store": timed_rate(count, store)}
        if has_backend():
            noop = self._noop()

            def api() -> None:
                for _ in range(count):
                    noop.enqueue()

            metrics["rate"] = timed_rate(count, api)
        else:
            metrics["rate"] = metrics["rate_store"]
        return metrics

    def enqueue_bulk(self, count: int, batch: int) -> dict[str, float]:
        from dispatch_jobs.store import enqueue_jobs

        def store() -> None:
            for start in range(0, count, batch):
                enqueue_jobs([self._job() for _ in range(min(batch, count - start))])

        metrics = {"rate_store": timed_rate(count, store)}
        noop = self._noop()
        if has_backend() and hasattr(noop, "enqueue_many"):
            calls: list[tuple[tuple[object, ...], dict[str, object]]] = [((), {})] * batch

            def api() -> None:
                for start in range(0, count, batch):
                    noop.enqueue_many(calls[: min(batch, count - start)])

            metrics["rate"] = timed_rate(count, api)
        else:
            metrics["rate"] = metrics["rate_store"]
        return metrics

    def fill(self, count: int) -> None:
        try:
            insert_rows(count, "pending")
        except ImportError:  # the store's internals moved: fall back to its API
            from dispatch_jobs.store import enqueue_jobs

            for start in range(0, count, FILL_CHUNK):
                enqueue_jobs([self._job() for _ in range(min(FILL_CHUNK, count - start))])

    def enqueue_one(self) -> None:
        if has_backend():
            self._noop().enqueue()
        else:
            from dispatch_jobs.store import enqueue_job

            enqueue_job(self._job())

    # -- workers ------------------------------------------------------------

    def worker_argv(self, mode: str) -> list[str]:
        if not has_worker():
            raise Unsupported("dispatch_jobs has no runjobs command yet")
        argv = self.manage("runjobs", "--queue", "default")
        if mode in ("default", "tuned"):
            argv.append("--burst")
        if mode == "tuned":
            argv += shlex.split(TUNED_ARGS)
        elif mode == "c32":
            argv += ["--concurrency", "32"]
        return argv

    def worker_env(self, mode: str) -> dict[str, str]:
        env = super().worker_env(mode)
        env["BENCH_DJ_NOTIFY"] = "0" if mode == "poll" else "1"
        return env

    # -- probes -------------------------------------------------------------

    def _jobs(self):  # type: ignore[no-untyped-def]
        from dispatch_jobs.models import Job

        return Job.objects

    def finished(self) -> int:
        return self._jobs().filter(state="completed").count()

    def failed(self) -> int:
        return self._jobs().filter(state="failed").count()

    def finish_span(self) -> tuple[float, float] | None:
        from django.db.models import Max, Min

        span = (
            self._jobs()
            .filter(state="completed")
            .aggregate(first=Min("completed_at"), last=Max("completed_at"))
        )
        if span["first"] is None:
            return None
        return span["first"].timestamp(), span["last"].timestamp()

    def latencies(self) -> list[float]:
        rows = (
            self._jobs()
            .filter(started_at__isnull=False)
            .order_by("id")
            .values_list("created_at", "started_at")
        )
        return [(started - created).total_seconds() for created, started in rows]

    # -- dispatch_jobs-only scenarios ------------------------------------------

    def claim_rate(self, finished_rows: int, claims: int, reps: int, batch: int) -> list[dict]:
        """Claims per second of ``store.claim_jobs`` (leased, ``batch`` per call)
        in a loop over ``claims`` pending jobs, beside ``finished_rows``
        completed ones; ``reps`` times on the same table. On the 1M table the
        admin job list is measured too, when the admin exists."""
        from django.db import connection

        self.prepare()
        if finished_rows:
            started = time.perf_counter()
            insert_rows(finished_rows, "completed")
            took = time.perf_counter() - started
            print(f"  inserted {finished_rows:,} finished rows in {took:.1f} s")
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("VACUUM ANALYZE dispatch_jobs_job")
        runs = []
        for _ in range(reps):
            self.fill(claims)
            run = {"rate": self._claim_loop(claims, batch)}
            if finished_rows and has_admin():
                run.update(admin_list())
            runs.append(run)
        return runs

    def raw_ceiling(self, jobs: int, batch: int) -> dict[str, float]:
        """The machine's ceiling for comparison: one process, raw SQL on the same
        table, claim ``batch`` rows with one UPDATE ... SKIP LOCKED statement,
        then mark them completed, one transaction each (no leases, no fences,
        no usage rows, no handler). Not something dispatch_jobs could ship."""
        from django.db import connection, transaction

        if connection.vendor != "postgresql":
            raise Unsupported("the raw ceiling is written for PostgreSQL")
        self.filled(jobs)
        claim = (
            "UPDATE dispatch_jobs_job SET state = 'running', started_at = now() "
            "WHERE id IN (SELECT id FROM dispatch_jobs_job WHERE state = 'pending' "
            "AND queue = 'default' AND run_at <= now() ORDER BY priority DESC, run_at, id "
            "LIMIT %s FOR UPDATE SKIP LOCKED) RETURNING id"
        )
        complete = (
            "UPDATE dispatch_jobs_job SET state = 'completed', completed_at = now() "
            "WHERE id = ANY(%s)"
        )
        done = 0
        started = time.perf_counter()
        with connection.cursor() as cursor:
            while True:
                with transaction.atomic():
                    cursor.execute(claim, [batch])
                    ids = [row[0] for row in cursor.fetchall()]
                if not ids:
                    break
                with transaction.atomic():
                    cursor.execute(complete, [ids])
                done += len(ids)
        return {"rate": done / (time.perf_counter() - started)}

    def _claim_loop(self, claims: int, batch: int) -> float:
        return claim_loop(claims, batch)


def claim_loop(claims: int, batch: int) -> float:
    """Claims per second of ``store.claim_jobs`` (leased, ``batch`` per call)
    until ``claims`` jobs are taken."""
    from dispatch_jobs.store import ClaimOptions, claim_jobs

    opts = ClaimOptions(
        queues=["default"], limit=batch, worker_id="bench", lease_ttl=timedelta(seconds=60)
    )
    claimed = 0
    started = time.perf_counter()
    while claimed < claims:
        got = len(claim_jobs(opts))
        if not got:
            break
        claimed += got
    elapsed = time.perf_counter() - started
    if claimed < claims:
        raise BenchError(f"claimed {claimed} of {claims} jobs")
    return claimed / elapsed


def insert_rows(count: int, state: str) -> None:
    """Insert ``count`` no-op jobs in ``state`` with one INSERT ... SELECT per
    100,000 rows (set-up, not measured: the enqueue scenarios measure the API).
    Column values come from a ``Job`` passed through the store's own
    validation, so the rows are the ones ``enqueue_jobs`` would write."""
    from django.db import connection

    from dispatch_jobs.models import Job
    from dispatch_jobs.store.enqueue import prepare

    template = prepare(Job(name=TASK_NAME, queue="default", payload={"args": [], "kwargs": {}}))
    template.state = state
    finished = state in ("completed", "failed", "cancelled")
    columns, exprs, values = [], [], []
    for field in Job._meta.concrete_fields:
        if field.primary_key or field.name in ("run_at", "created_at", "updated_at"):
            continue  # the key and the database-defaulted clocks fill themselves
        columns.append(connection.ops.quote_name(field.column))
        if finished and field.name in ("started_at", "completed_at"):
            exprs.append("CURRENT_TIMESTAMP")
            continue
        exprs.append("%s")
        values.append(field.get_db_prep_save(getattr(template, field.attname), connection))
    if connection.vendor not in ("postgresql", "sqlite"):
        _insert_with_orm(template, count)
        return
    table = connection.ops.quote_name(Job._meta.db_table)
    head = f"INSERT INTO {table} ({', '.join(columns)}) "
    select = f"SELECT {', '.join(exprs)} "
    chunk = 100_000
    # Autocommit per chunk: PostgreSQL will not build an index in a transaction
    # that still has deferred foreign-key checks pending (replay_of).
    with _without_indexes(count >= 200_000):
        for start in range(0, count, chunk):
            n = min(chunk, count - start)
            with connection.cursor() as cursor:
                if connection.vendor == "postgresql":
                    cursor.execute(head + select + "FROM generate_series(1, %s)", [*values, n])
                else:
                    cursor.execute(
                        head + "WITH RECURSIVE seq(x) AS (SELECT 1 UNION ALL SELECT x + 1 "
                        "FROM seq WHERE x < %s) " + select + "FROM seq",
                        [n, *values],
                    )


def _insert_with_orm(template: Job, count: int) -> None:
    from django.db.models.functions import Now

    from dispatch_jobs.models import Job

    fields = {
        f.attname: getattr(template, f.attname)
        for f in Job._meta.concrete_fields
        if not f.primary_key and f.name not in ("run_at", "created_at", "updated_at")
    }
    if template.state in ("completed", "failed", "cancelled"):
        fields.update(started_at=Now(), completed_at=Now())
    for start in range(0, count, FILL_CHUNK):
        Job.objects.bulk_create([Job(**fields) for _ in range(min(FILL_CHUNK, count - start))])


@contextmanager
def _without_indexes(active: bool) -> Iterator[None]:
    """Drop the job table's secondary indexes for a large load and build them
    again after: one index build is much faster than a million index inserts.
    The rebuilt indexes are the model's own, so what is measured is unchanged."""
    from django.db import connection

    from dispatch_jobs.models import Job

    if not (active and connection.vendor == "postgresql"):
        yield
        return
    indexes = list(Job._meta.indexes)
    with connection.schema_editor(atomic=False) as editor:
        for index in indexes:
            editor.remove_index(Job, index)
    try:
        yield
    finally:
        with connection.schema_editor(atomic=False) as editor:
            for index in indexes:
                editor.add_index(Job, index)


# The admin pages the 1M-row scenario reads: (label, URL).
ADMIN_PAGES = (
    ("admin_list", "/admin/dispatch_jobs/job/"),
    ("admin_completed", "/admin/dispatch_jobs/job/?state=completed"),
    ("admin_failed", "/admin/dispatch_jobs/job/?state=failed"),
)


def admin_list(pages: tuple[tuple[str, str], ...] = ADMIN_PAGES, reps: int = 1) -> dict[str, float]:
    """The admin's job changelist pages (by default unfiltered, and filtered by
    a common and a rare state): wall time of one request through Django's test
    client (the median of ``reps``), and its query count."""
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext, setup_test_environment

    # An earlier repetition in this process may have set it up already.
    with suppress(RuntimeError):
        setup_test_environment()
    user_model = get_user_model()
    user = user_model.objects.filter(
        username="bench"
    ).first() or user_model.objects.create_superuser("bench", "bench@example.com", "bench")
    client = Client()
    client.force_login(user)
    metrics: dict[str, float] = {}
    for label, url in pages:
        client.get(url)  # warm caches (templates, content types)
        times = []
        for _ in range(reps):
            with CaptureQueriesContext(connection) as queries:
                started = time.perf_counter()
                response = client.get(url)
                times.append(time.perf_counter() - started)
            if response.status_code != 200:
                raise BenchError(f"{url} answered {response.status_code}")
        metrics[f"{label}_ms"] = statistics.median(times) * 1000
        metrics[f"{label}_queries"] = float(len(queries.captured_queries))
        # Reads only: not transaction control (BEGIN/COMMIT/SAVEPOINT) nor the
        # statement-timeout setting the admin wraps its list in on PostgreSQL.
        reads = [
            q["sql"]
            for q in queries.captured_queries
            if q["sql"].lstrip("(").upper().startswith("SELECT") and "set_config" not in q["sql"]
        ]
        metrics[f"{label}_reads"] = float(len(reads))
    return metrics


SYSTEM = DispatchJobs
