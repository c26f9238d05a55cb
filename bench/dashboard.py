"""The admin dashboard's render at a million jobs: wall time and queries of
one request through Django's test client, uncached (the snapshot cache
cleared before each request) and cached, with the CPU time the request took in
the Django process and, on a local PostgreSQL, in its server process (on a
shared machine these move much less with the load than the wall time, which
includes waiting for a core; the load average is printed before and after).
Run by hand:

    BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_dashboard \\
        .venv/bin/python -m bench.dashboard --jobs 1000000

The table is built with the bench's own 1M-row builder
(``systems.dispatch_jobs.insert_rows``): completed jobs, plus a few thousand
pending and failed. Their finish times are then spread over the
last day and their names over a dozen tasks (a set-up UPDATE, not measured),
so the charts and task tables have something to draw; the rollup
(``store.roll_up_finished_jobs``, what maintenance runs) is then brought up to
date, and its own rate is reported. A rerun on the same database reuses the
table when it already holds ``--jobs`` rows.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from datetime import timedelta
from typing import Any

TASKS = 12
URL = "/admin/dispatch_jobs/"

# The set-up UPDATE per database: finish times over the last day (a minute and
# a second from the id, run times up to 0.9 s), names over TASKS tasks.
_SPREAD = {
    "postgresql": "UPDATE dispatch_jobs_job SET "
    "completed_at = now() - (id %% 1440) * interval '1 minute' "
    "- (id %% 60) * interval '1 second', "
    "started_at = now() - (id %% 1440) * interval '1 minute' "
    "- (id %% 60) * interval '1 second' - (id %% 900) * interval '1 millisecond', "
    "name = 'bench.tasks.task_' || ((id / 7) %% %s) "
    "WHERE completed_at IS NOT NULL",
    "mysql": "UPDATE dispatch_jobs_job SET "
    "completed_at = UTC_TIMESTAMP(6) - INTERVAL (id %% 1440) MINUTE "
    "- INTERVAL (id %% 60) SECOND, "
    "started_at = UTC_TIMESTAMP(6) - INTERVAL (id %% 1440) MINUTE "
    "- INTERVAL (id %% 60) SECOND - INTERVAL ((id %% 900) * 1000) MICROSECOND, "
    "name = CONCAT('bench.tasks.task_', (id DIV 7) %% %s) "
    "WHERE completed_at IS NOT NULL",
    "sqlite": "UPDATE dispatch_jobs_job SET "
    "completed_at = strftime('%%Y-%%m-%%d %%H:%%M:%%f', 'now', "
    "'-' || (id %% 1440) || ' minutes', '-' || (id %% 60) || ' seconds'), "
    "started_at = strftime('%%Y-%%m-%%d %%H:%%M:%%f', 'now', "
    "'-' || (id %% 1440) || ' minutes', '-' || ((id %% 60) + (id %% 900) / 1000.0) || ' seconds'), "
    "name = 'bench.tasks.task_' || ((id / 7) %% %s) "
    "WHERE completed_at IS NOT NULL",
}


def _setup_django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.django_project.settings")
    os.environ.setdefault("BENCH_SYSTEM", "dispatch_jobs")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def _build(jobs: int) -> None:
    from django.db import connection

    from dispatch_jobs.models import Job, RollupMark, TaskMinute

    from .systems.dispatch_jobs import insert_rows

    have = Job.objects.count()
    if have >= jobs:
        print(f"  reusing {have:,} jobs")
        return
    started = time.perf_counter()
    insert_rows(jobs - have - 6_000, "completed")
    insert_rows(3_000, "failed")
    insert_rows(3_000, "pending")
    print(f"  inserted {jobs - have:,} jobs in {time.perf_counter() - started:.1f} s")
    with connection.cursor() as cursor:
        cursor.execute(_SPREAD[connection.vendor], [TASKS])
        if connection.vendor == "postgresql":
            cursor.execute("VACUUM dispatch_jobs_job")  # the visibility map: index-only scans
    _analyze("dispatch_jobs_job")
    TaskMinute.objects.all().delete()
    RollupMark.objects.all().delete()


def _roll_up() -> None:
    from dispatch_jobs import store

    started = time.perf_counter()
    total = 0
    while True:
        done = store.roll_up_finished_jobs(batch=20_000, max_batches=10, lag=timedelta(0))
        total += done
        if not done:
            break
    took = time.perf_counter() - started
    if total:
        print(f"  rolled up {total:,} jobs in {took:.1f} s ({total / took:,.0f} jobs/s)")
        _analyze("dispatch_jobs_taskminute")  # as autovacuum would, after a fill


def _analyze(table: str) -> None:
    from django.db import connection

    statement = {"postgresql": f"ANALYZE {table}", "mysql": f"ANALYZE TABLE {table}"}
    with connection.cursor() as cursor:
        cursor.execute(statement.get(connection.vendor, "ANALYZE"))


def _measure(reps: int, nice: int = 0) -> None:
    from django.contrib.auth import get_user_model
    from django.core.cache import cache
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext, setup_test_environment

    from dispatch_jobs.models import TaskMinute

    setup_test_environment()
    users = get_user_model().objects
    user = users.filter(username="bench").first() or users.create_superuser(
        "bench", "bench@example.com", "bench"
    )
    client = Client()
    client.force_login(user)
    client.get(URL)  # warm: templates, content types
    backend = _backend_pid(connection)
    if nice:
        for pid in (0, backend or 0):
            os.setpriority(os.PRIO_PROCESS, pid, nice)
        print(f"  niceness {nice} for this process and its database backend")
    print(f"  load average before: {_load()}")
    for label, clear in (("uncached", True), ("cached", False)):
        times, cpu, queries = [], [], []
        server_before = _cpu_seconds(backend)
        for _ in range(reps):
            if clear:
                cache.clear()
            with CaptureQueriesContext(connection) as captured:
                started, started_cpu = time.perf_counter(), time.process_time()
                response = client.get(URL)
                times.append((time.perf_counter() - started) * 1000)
                cpu.append((time.process_time() - started_cpu) * 1000)
            assert response.status_code == 200, response.status_code
            assert b'<svg class="dj-chart"' in response.content
            queries.append(len(captured.captured_queries))
        server = ""
        if backend:
            spent = (_cpu_seconds(backend) - server_before) * 1000 / reps
            server = f", database backend CPU {spent:.1f} ms a request (mean)"
        print(
            f"  dashboard {label}: median {statistics.median(times):.1f} ms "
            f"(min {min(times):.1f}, max {max(times):.1f}, {reps} requests), "
            f"Django process CPU median {statistics.median(cpu):.1f} ms{server}, "
            f"queries {min(queries)}-{max(queries)}"
        )
    print(f"  load average after: {_load()}")
    print(f"  rollup rows: {TaskMinute.objects.count():,}")


def _backend_pid(connection: Any) -> int | None:
    """PostgreSQL's server process for this connection, when it runs on this
    machine (its CPU time is read from /proc): the database side of each
    request, which the wall time mixes with waiting for a core."""
    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = int(cursor.fetchone()[0])
    return pid if os.path.exists(f"/proc/{pid}/stat") else None


def _cpu_seconds(pid: int | None) -> float:
    if pid is None:
        return 0.0
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    # utime and stime (fields 14 and 15 of proc(5); the 12th and 13th after the name).
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _load() -> str:
    return " ".join(f"{value:.1f}" for value in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument(
        "--nice",
        type=int,
        default=0,
        help="run the measured requests at this niceness (e.g. -15, as root), and the "
        "local PostgreSQL server process serving them too: on a machine shared with "
        "other work, the render's own time rather than its wait for a core",
    )
    args = parser.parse_args()
    _setup_django()
    from django.db import connection

    print(f"dashboard bench on {connection.vendor}, {args.jobs:,} jobs")
    _build(args.jobs)
    _roll_up()
    _measure(args.reps, args.nice)


if __name__ == "__main__":
    main()
