"""Micro-benchmark of the enqueue and claim hot paths, run by hand.

    .venv/bin/python -m bench.hotpath --db postgres://postgres@127.0.0.1:5432/perf_f
    .venv/bin/python -m bench.hotpath --db mysql://root@127.0.0.1:3306/perf_f
    .venv/bin/python -m bench.hotpath --db sqlite:////tmp/dj_f/perf.sqlite3
    .venv/bin/python -m bench.hotpath --db ... --only claim --finished 1000000
    .venv/bin/python -m bench.hotpath --db ... --only single --profile
    .venv/bin/python -m bench.hotpath --db postgres://... --only settle --claim-batch 500

Scenarios (each repeated ``--reps`` times; the medians reported are jobs/s and
this process's CPU time per job, in µs: the Python share of the cost, steadier
than the rate on a shared machine, since the database's work is another process):

- ``single``: ``noop.enqueue()`` one at a time, autocommit (one job per transaction);
- ``bulk``: ``noop.enqueue_many()`` in batches of ``--batch``;
- ``claim``: ``store.claim_jobs`` with a lease, ``--claim-batch`` jobs per claim,
  until ``--claim-jobs`` pending jobs are all claimed; with ``--finished N`` it runs
  once on a table without finished rows and once with N completed rows, and prints
  the ratio;
- ``settle`` (PostgreSQL on this machine): claims ``--claim-jobs`` jobs in batches
  of ``--claim-batch`` and writes each batch's outcomes as the worker does
  (``store.complete_leased_jobs``, a usage row each unless ``--no-usage``), and
  prints the database's CPU per job for the claim and for the completion apart,
  read from ``/proc`` for the connection's backend. ``--claim-indexes-only``
  first drops the job table's indexes but the claim's (a scratch database!): what
  the admin's indexes cost each statement.

The database named in ``--db`` is migrated and its job table emptied: use a
database of its own. ``--profile`` runs pyinstrument over the first repetition.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any, NamedTuple

from bench.dburl import database_settings

WORKER_ID = "bench-hotpath"


def noop(n: int = 0) -> None:
    """The job: does nothing (its argument makes every bulk payload different)."""


def _database(url: str, async_commit: bool = False, prepare: bool = False) -> dict[str, Any]:
    database = database_settings(url)
    if not url.startswith("sqlite"):
        database["CONN_MAX_AGE"] = None
    if async_commit and url.startswith("postgres"):
        # What the code costs without the commit's WAL flush (not a durable setup).
        database["OPTIONS"] = {"options": "-c synchronous_commit=off"}
    if prepare and url.startswith("postgres"):
        # Django's option for a direct connection: psycopg prepares a statement it
        # has run this many times (the store's INSERT binds server-side for it).
        database.setdefault("OPTIONS", {})["prepare_threshold"] = 5
    return database


def setup(url: str, async_commit: bool = False, prepare: bool = False) -> Any:
    """Configure Django on ``url``, migrate, and return the no-op task."""
    import django
    from django.conf import settings
    from django.core.management import call_command

    settings.configure(
        DEBUG=False,
        USE_TZ=True,
        TIME_ZONE="UTC",
        DATABASES={"default": _database(url, async_commit, prepare)},
        INSTALLED_APPS=["django.contrib.contenttypes", "django.contrib.auth", "dispatch_jobs"],
        TASKS={"default": {"BACKEND": "dispatch_jobs.backend.DispatchBackend"}},
        DEFAULT_AUTO_FIELD="django.db.models.BigAutoField",
    )
    django.setup()
    call_command("migrate", verbosity=0)
    import bench.hotpath as module
    from dispatch_jobs import task

    return task(module.noop)


def _empty() -> None:
    from django.db import connection

    from dispatch_jobs.models import Job

    table = Job._meta.db_table
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(f"TRUNCATE {table} RESTART IDENTITY CASCADE")
        else:
            cursor.execute(f"DELETE FROM {table}")
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"VACUUM ANALYZE {table}")


def _fill(count: int, *, state: str = "pending") -> None:
    """``count`` rows, doubled in SQL from one ORM-written template (fast at 1M)."""
    from django.db import connection

    from dispatch_jobs import store
    from dispatch_jobs.models import Job

    if count <= 0:
        return
    template = store.enqueue_jobs([Job(name="bench.hotpath.noop", queue="default")])[0]
    Job.objects.filter(pk=template.pk).update(state=state)
    table = Job._meta.db_table
    columns = ", ".join(
        connection.ops.quote_name(f.column) for f in Job._meta.concrete_fields if f.name != "id"
    )
    made = 1
    while made < count:
        step = min(made, count - made)
        with connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {table} ({columns}) SELECT {columns} FROM {table} "
                f"WHERE state = %s ORDER BY id LIMIT %s",
                [state, step],
            )
        made += step
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"VACUUM ANALYZE {table}")


class Timing(NamedTuple):
    """One repetition: jobs done, wall-clock seconds, and this process's CPU seconds."""

    jobs: int
    seconds: float
    cpu: float

    @property
    def rate(self) -> float:
        return self.jobs / self.seconds

    @property
    def cpu_per_job(self) -> float:
        """Microseconds of this process's CPU per job."""
        return self.cpu / self.jobs * 1e6


def _timed(run: Callable[[], int]) -> Timing:
    """Time ``run`` (which returns how many jobs it did) on both clocks."""
    started, cpu = time.perf_counter(), time.process_time()
    jobs = run()
    return Timing(jobs, time.perf_counter() - started, time.process_time() - cpu)


def single(noop_task: Any, count: int) -> Timing:
    _empty()

    def run() -> int:
        for i in range(count):
            noop_task.enqueue(i)
        return count

    return _timed(run)


def bulk(noop_task: Any, count: int, batch: int) -> Timing:
    _empty()

    def run() -> int:
        for start in range(0, count // batch * batch, batch):
            noop_task.enqueue_many([((start + i,), {}) for i in range(batch)])
        return count // batch * batch

    return _timed(run)


def claim(count: int, batch: int) -> Timing:
    """Claim ``count`` fresh pending jobs; finished rows already there stay."""
    from dispatch_jobs import store
    from dispatch_jobs.models import Job

    Job.objects.exclude(state="completed").delete()
    _fill(count)
    options = store.ClaimOptions(
        queues=["default"], limit=batch, worker_id=WORKER_ID, lease_ttl=timedelta(seconds=30)
    )

    def run() -> int:
        claimed = 0
        while jobs := store.claim_jobs(options):
            claimed += len(jobs)
        return claimed

    timing = _timed(run)
    if timing.jobs != count:
        raise SystemExit(f"claimed {timing.jobs} of {count} jobs")
    return timing


class Settle(NamedTuple):
    """One ``settle`` repetition: the database's and this process's CPU per job,
    in µs, for the claim and the completion apart."""

    claim_db: float
    claim_client: float
    complete_db: float
    complete_client: float


def _backend_pid() -> int:
    """The process id of this connection's PostgreSQL backend (the database runs
    on this machine: its CPU is read from ``/proc`` by ``diagnose.cpu_seconds``)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return int(cursor.fetchone()[0])


def settle(count: int, batch: int, usage: bool) -> Settle:
    """Claim ``count`` fresh jobs, then write their outcomes (completed, with the
    attempt record and usage a worker sends), ``batch`` at a time."""
    from dispatch_jobs import store
    from dispatch_jobs.models import Job, Usage

    Job.objects.all().delete()
    Usage.objects.all().delete()
    _fill(count)
    from bench.diagnose import cpu_seconds

    pid = _backend_pid()

    def backend() -> float:
        return cpu_seconds(pid)

    options = store.ClaimOptions(
        queues=["default"], limit=batch, worker_id=WORKER_ID, lease_ttl=timedelta(seconds=300)
    )
    db_0, client_0 = backend(), time.process_time()
    jobs: list[Any] = []
    while claimed := store.claim_jobs(options):
        jobs += claimed
    db_1, client_1 = backend(), time.process_time()
    spent = store.Spent(
        wall_time=timedelta(microseconds=20), cpu_time=timedelta(microseconds=15), executor="thread"
    )
    record = {
        "status": "completed",
        "attempt": 1,
        "message": "",
        "traceback": "",
        "worker_id": WORKER_ID,
        "started_at": "2026-12-05T03:46:10.059536+00:00",
        "finished_at": "2026-12-05T03:46:10.059554+00:00",
        "exception_class": "",
    }
    settled = [
        store.Settled(job, job.lease_epoch, store.Completed(), record, spent if usage else None)
        for job in jobs
    ]
    db_2, client_2 = backend(), time.process_time()
    for start in range(0, len(settled), batch):
        if store.complete_leased_jobs(WORKER_ID, settled[start : start + batch]):
            raise SystemExit("a lease was lost: is another worker on this database?")
    db_3, client_3 = backend(), time.process_time()
    if len(jobs) != count:
        raise SystemExit(f"claimed {len(jobs)} of {count} jobs")
    return Settle(
        *(1e6 * seconds / count for seconds in (db_1 - db_0, client_1 - client_0)),
        *(1e6 * seconds / count for seconds in (db_3 - db_2, client_3 - client_2)),
    )


def _measure_settle(count: int, batch: int, usage: bool, reps: int) -> None:
    runs = [settle(count, batch, usage) for _ in range(reps)]
    for label, db_field, client_field in (
        ("claim", "claim_db", "claim_client"),
        ("completion" + ("" if usage else ", no usage row"), "complete_db", "complete_client"),
    ):
        db_each = [getattr(run, db_field) for run in runs]
        client_each = [getattr(run, client_field) for run in runs]
        shown = ", ".join(f"{v:.1f}" for v in db_each)
        print(
            f"{label + f' (batch {batch})':<36} database {statistics.median(db_each):6.1f} µs/job"
            f"  client {statistics.median(client_each):6.1f} µs/job   ({shown})",
            flush=True,
        )


def _measure(name: str, run: Callable[[], Timing], reps: int, profile: bool) -> float:
    """Run ``reps`` repetitions, print the medians; returns the median rate."""
    timings = []
    for rep in range(reps):
        if profile and rep == 0:
            from pyinstrument import Profiler

            profiler = Profiler(interval=0.0005)
            profiler.start()
            timings.append(run())
            profiler.stop()
            print(profiler.output_text(unicode=False, color=False, show_all=False))
        else:
            timings.append(run())
    median = statistics.median(t.rate for t in timings)
    cpu = statistics.median(t.cpu_per_job for t in timings)
    shown = ", ".join(f"{t.rate:,.0f}" for t in timings)
    print(
        f"{name:<28} median {median:>10,.0f} jobs/s  {cpu:>7,.1f} µs CPU/job   ({shown})",
        flush=True,
    )
    return median


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", required=True, help="database URL (emptied!)")
    parser.add_argument("--only", choices=["single", "bulk", "claim", "settle"], action="append")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--single-jobs", type=int, default=3000)
    parser.add_argument("--bulk-jobs", type=int, default=50_000)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--claim-jobs", type=int, default=20_000)
    parser.add_argument("--claim-batch", type=int, default=100)
    parser.add_argument("--finished", type=int, default=0, help="also claim with N done rows")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--no-usage", action="store_true", help="settle: no usage rows")
    parser.add_argument(
        "--claim-indexes-only",
        action="store_true",
        help="settle: drop the job table's indexes but the claim's first (scratch database!)",
    )
    parser.add_argument(
        "--async-commit",
        action="store_true",
        help="PostgreSQL: synchronous_commit=off, to see the code's cost without fsync",
    )
    parser.add_argument(
        "--prepare",
        action="store_true",
        help="PostgreSQL: OPTIONS prepare_threshold=5, so the store's INSERT is prepared",
    )
    args = parser.parse_args()
    only = set(args.only or ["single", "bulk", "claim"])
    noop_task = setup(args.db, args.async_commit, args.prepare)
    from django.db import connection

    print(
        f"database: {connection.vendor} {args.db} "
        f"async_commit={args.async_commit} prepare={args.prepare}"
    )
    if "single" in only:
        _measure(
            "single enqueue", lambda: single(noop_task, args.single_jobs), args.reps, args.profile
        )
    if "bulk" in only:
        _measure(
            f"bulk enqueue (batch {args.batch})",
            lambda: bulk(noop_task, args.bulk_jobs, args.batch),
            args.reps,
            args.profile,
        )
    if "claim" in only:
        _empty()
        empty = _measure(
            f"claim (batch {args.claim_batch})",
            lambda: claim(args.claim_jobs, args.claim_batch),
            args.reps,
            args.profile,
        )
        if args.finished:
            _empty()
            _fill(args.finished, state="completed")
            full = _measure(
                f"claim, {args.finished:,} finished",
                lambda: claim(args.claim_jobs, args.claim_batch),
                args.reps,
                args.profile,
            )
            print(f"claim with finished rows / empty: {full / empty:.0%}")
    if "settle" in only:
        if connection.vendor != "postgresql":
            raise SystemExit("settle reads the backend's CPU: PostgreSQL on this machine only")
        if args.claim_indexes_only:
            from bench.diagnose import drop_admin_indexes

            dropped = drop_admin_indexes(args.db)
            print(f"dropped {len(dropped)} job indexes: {', '.join(dropped)}", flush=True)
        _measure_settle(args.claim_jobs, args.claim_batch, not args.no_usage, args.reps)
    _empty()


if __name__ == "__main__":
    main()
