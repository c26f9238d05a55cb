"""The admin dashboard's render at a million jobs: wall time and queries of
one request through Django's test client, uncached (the snapshot cache
cleared before each request) and cached. Run by hand:

    BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_dashboard \\
        .venv/bin/python -m bench.dashboard --jobs 1000000

The table is built with the bench's own 1M-row builder
(``systems.dispatch_jobs.insert_rows``): completed jobs, plus a few thousand
pending and failed. On PostgreSQL their finish times are then spread over the
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

TASKS = 12
URL = "/admin/dispatch_jobs/"


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
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE dispatch_jobs_job SET "
                "completed_at = now() - (id %% 1440) * interval '1 minute' "
                "- (id %% 60) * interval '1 second', "
                "started_at = now() - (id %% 1440) * interval '1 minute' "
                "- (id %% 60) * interval '1 second' - (id %% 900) * interval '1 millisecond', "
                "name = 'bench.tasks.task_' || ((id / 7) %% %s) "
                "WHERE completed_at IS NOT NULL",
                [TASKS],
            )
            cursor.execute("VACUUM ANALYZE dispatch_jobs_job")
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


def _measure(reps: int) -> None:
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
    for label, clear in (("uncached", True), ("cached", False)):
        times, queries = [], []
        for _ in range(reps):
            if clear:
                cache.clear()
            with CaptureQueriesContext(connection) as captured:
                started = time.perf_counter()
                response = client.get(URL)
                times.append((time.perf_counter() - started) * 1000)
            assert response.status_code == 200, response.status_code
            assert b'<svg class="dj-chart"' in response.content
            queries.append(len(captured.captured_queries))
        print(
            f"  dashboard {label}: median {statistics.median(times):.1f} ms "
            f"(min {min(times):.1f}, max {max(times):.1f}, {reps} requests), "
            f"queries {min(queries)}-{max(queries)}"
        )
    print(f"  rollup rows: {TaskMinute.objects.count():,}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--reps", type=int, default=15)
    args = parser.parse_args()
    _setup_django()
    from django.db import connection

    print(f"dashboard bench on {connection.vendor}, {args.jobs:,} jobs")
    _build(args.jobs)
    _roll_up()
    _measure(args.reps)


if __name__ == "__main__":
    main()
