"""What observability costs a draining worker, run by hand.

    .venv/bin/python -m bench.overhead --db postgres://postgres@127.0.0.1:5432/perf_o
    .venv/bin/python -m bench.overhead --db ... --mode off --mode metrics --jobs 20000

Each repetition empties the job table, enqueues ``--jobs`` no-op jobs with
``store.enqueue_jobs`` and drains them with one ``runjobs --burst`` process (the
bench's tuned arguments), in each mode in turn:

- ``off``: no observability flag (the default);
- ``metrics``: ``--metrics-port 127.0.0.1:0`` (needs the ``metrics`` extra).

Reported per mode, as medians over ``--reps``: jobs/s of the drain and the
worker process's CPU time per job in µs (its user + system time, from
``getrusage`` of the finished child: steadier than the rate on a shared
machine). Both net of a run of the same command on an empty queue (start-up,
registration, shutdown). The database named in ``--db`` is migrated and emptied: use one of
its own.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path.cwd()
TASK = "bench.django_project.tasks.noop"
MODES = {"off": [], "metrics": ["--metrics-port", "127.0.0.1:0"]}
WORKER = ["--burst", "--queue", "default", "--verbosity", "0", "--concurrency", "2"]
WORKER += ["--prefetch", "1000", "--no-maintenance"]


def _noop_job(job_class: type) -> object:
    return job_class(name=TASK, queue="default", payload={"args": [], "kwargs": {}})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", required=True, help="database URL (emptied!)")
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--mode", choices=sorted(MODES), action="append")
    args = parser.parse_args()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "bench.django_project.settings",
        "BENCH_SYSTEM": "dispatch_jobs",
        "BENCH_DATABASE_URL": args.db,
        "PYTHONPATH": str(ROOT),
    }
    os.environ.update(env)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from dispatch_jobs.models import Job
    from dispatch_jobs.store import enqueue_jobs

    def drain(mode: str) -> tuple[float, float]:
        """(wall seconds, CPU seconds) of one runjobs --burst process."""
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        began = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "django", "runjobs", *WORKER, *MODES[mode]],
            env=env,
            cwd=ROOT,
            check=True,
        )
        took = time.perf_counter() - began
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return took, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)

    results: dict[str, list[tuple[float, float]]] = {}
    for _rep in range(args.reps):
        for mode in args.mode or ["off", "metrics"]:
            Job.objects.all().delete()
            # The process's start and stop, measured on an empty queue, are not
            # the jobs' cost: subtracted from the drain's.
            idle_wall, idle_cpu = drain(mode)
            for start in range(0, args.jobs, 5000):
                enqueue_jobs([_noop_job(Job) for _ in range(min(5000, args.jobs - start))])
            wall, cpu = drain(mode)
            left = Job.objects.exclude(state="completed").count()
            if left:
                raise SystemExit(f"{mode}: {left} jobs not completed")
            per_job = max(cpu - idle_cpu, 0.0) / args.jobs * 1e6
            results.setdefault(mode, []).append((args.jobs / max(wall - idle_wall, 1e-3), per_job))
    for mode, samples in results.items():
        rate = statistics.median(s[0] for s in samples)
        cpu_us = statistics.median(s[1] for s in samples)
        runs = ", ".join(f"{s[0]:.0f}/s {s[1]:.0f}µs" for s in samples)
        print(f"{mode:8} {rate:8.0f} jobs/s  {cpu_us:6.0f} µs CPU/job   ({runs})")


if __name__ == "__main__":
    main()
