"""One ``runjobs --burst`` drain of no-op jobs, net of the process's own start and
stop: the measurement ``bench.overhead`` and ``bench.rungs`` repeat for each
variant of the worker's arguments they compare.

``setup(db)`` points this process (and the workers it starts) at the bench's
Django project on ``db``, migrated; ``net_drain(env, args, jobs)`` empties the job
table, times the command on the empty queue, enqueues ``jobs`` no-op jobs, times
the drain and returns the difference per job.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path.cwd()
TASK = "bench.django_project.tasks.noop"
WORKER = ["--burst", "--queue", "default", "--verbosity", "0", "--concurrency", "2"]
WORKER += ["--prefetch", "1000", "--no-maintenance"]
CHUNK = 5000  # jobs per enqueue_jobs call


def setup(db: str) -> dict[str, str]:
    """Django set up here on ``db`` (migrated); the environment for the workers."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "bench.django_project.settings",
        "BENCH_SYSTEM": "dispatch_jobs",
        "BENCH_DATABASE_URL": db,
        "PYTHONPATH": str(ROOT),
    }
    os.environ.update(env)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    return env


def drain(env: dict[str, str], args: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one ``runjobs`` process and the children it reaps."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "django", "runjobs", *WORKER, *args], env=env, cwd=ROOT, check=True
    )
    took = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return took, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def net_drain(env: dict[str, str], args: list[str], jobs: int) -> tuple[float, float, float]:
    """(jobs/s, wall seconds per job, CPU seconds per job) of draining ``jobs``
    no-op jobs, net of the same command on an empty queue."""
    from dispatch_jobs.models import Job
    from dispatch_jobs.store import enqueue_jobs

    Job.objects.all().delete()
    idle_wall, idle_cpu = drain(env, args)
    for start in range(0, jobs, CHUNK):
        count = min(CHUNK, jobs - start)
        enqueue_jobs(
            [
                Job(name=TASK, queue="default", payload={"args": [], "kwargs": {}})
                for _ in range(count)
            ]
        )
    wall, cpu = drain(env, args)
    left = Job.objects.exclude(state="completed").count()
    if left:
        raise SystemExit(f"runjobs {' '.join(args)}: {left} jobs not completed")
    net_wall = max(wall - idle_wall, 1e-3)
    return jobs / net_wall, net_wall / jobs, max(cpu - idle_cpu, 0.0) / jobs
