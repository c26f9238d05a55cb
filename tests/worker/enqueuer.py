"""Enqueue jobs from a separate process, through whatever DATABASE_URL names.

``python -m tests.worker.enqueuer DIRECTORY COUNT`` enqueues COUNT
``record_run(DIRECTORY)`` jobs in one transaction through the store and prints
their ids as JSON. tests/worker/test_pgbouncer.py runs it with DATABASE_URL
pointing at PgBouncer, so the INSERT and its NOTIFY go through the pooler as a
web process's would.
"""

from __future__ import annotations

import json
import sys


def main(directory: str, count: int) -> list[int]:
    import django

    django.setup()
    from dispatch_jobs import store
    from dispatch_jobs.models import Job
    from tests.jobs import tasks

    jobs = store.enqueue_jobs(
        [
            Job(name=tasks.record_run.module_path, payload={"args": [directory], "kwargs": {}})
            for _ in range(count)
        ]
    )
    return [job.pk for job in jobs]


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], int(sys.argv[2]))))
