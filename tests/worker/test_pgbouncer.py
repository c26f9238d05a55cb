"""Workers behind a real PgBouncer in transaction mode.

Transaction pooling hands each transaction whichever server connection is free, so
session state does not survive from one statement to the next: LISTEN "succeeds"
but hears nothing. Here every worker's ``default`` connection goes through
PgBouncer; ``LISTEN_DATABASE`` names a direct connection for the LISTEN side alone.
Jobs are enqueued through PgBouncer too, by a separate process, as a web server
behind the same pooler would.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import timedelta
from functools import partial
from pathlib import Path

import pytest
from django.db import connection

from dispatch_jobs.models import Job, JobState
from tests.worker.pgbouncer import PgBouncer, free_port, pgbouncer_binary
from tests.worker.processes import FAST, ROOT, WorkerProcess, wait_until

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.slow,
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="PgBouncer pools PostgreSQL connections only",
    ),
]

# A poll interval no test waits out: a job picked up well inside it was woken by NOTIFY.
LONG_POLL = ["--poll-interval", "60", "--max-poll-interval", "60"]


@pytest.fixture
def bouncer() -> Iterator[PgBouncer]:
    if pgbouncer_binary() is None:
        if os.environ.get("CI") == "true":
            pytest.fail("pgbouncer is not installed; .ci/run installs Debian's package")
        pytest.skip("pgbouncer is not installed (apt-get install pgbouncer)")
    pooler = PgBouncer(connection.settings_dict)
    yield pooler
    pooler.stop()


def _direct_url(port: int | None = None) -> str:
    params = connection.settings_dict
    host, port = params.get("HOST") or "127.0.0.1", port or params.get("PORT") or 5432
    return f"postgres://{params.get('USER') or 'postgres'}@{host}:{port}/{params['NAME']}"


@pytest.fixture
def pooled_workers(
    workers: Callable[..., WorkerProcess], bouncer: PgBouncer, request: pytest.FixtureRequest
) -> Iterator[Callable[..., WorkerProcess]]:
    """Start ``runjobs`` (the suite's ``workers``) with ``default`` through
    PgBouncer; ``listen=True`` adds a direct ``listen`` alias as LISTEN_DATABASE."""

    def start(*args: str, listen: bool, listen_url: str = "") -> WorkerProcess:
        env = {"DATABASE_URL": bouncer.url(), "DISPATCH_TEST_POOLED": "1"}
        if listen:
            env["DISPATCH_TEST_LISTEN_URL"] = listen_url or _direct_url()
        return workers(*args, env=env)

    yield start
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        print(f"--- pgbouncer ---\n{bouncer.log()[-3000:]}")


def enqueue_through(bouncer: PgBouncer, directory: Path, count: int) -> list[int]:
    """Enqueue ``count`` record_run jobs from another process, through PgBouncer."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DATABASE_URL": bouncer.url(),
        "DISPATCH_TEST_POOLED": "1",
        "PYTHONPATH": str(ROOT),
    }
    done = subprocess.run(
        [sys.executable, "-m", "tests.worker.enqueuer", str(directory), str(count)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def runs(directory: Path) -> Counter[int]:
    path = directory / "runs"
    lines = path.read_text().split() if path.exists() else []
    return Counter(int(line) for line in lines)


def listening(worker: WorkerProcess) -> bool:
    return "Listening for enqueue" in worker.log()


def all_completed(ids: list[int]) -> bool:
    return Job.objects.filter(pk__in=ids, state=JobState.COMPLETED).count() == len(ids)


def pickup_delay(job_id: int) -> timedelta:
    """From the enqueue's commit to the claim, both on the database's clock."""
    job = Job.objects.get(pk=job_id)
    assert job.started_at is not None
    return job.started_at - job.created_at


def test_two_pooled_workers_run_every_job_exactly_once(pooled_workers, bouncer, tmp_path):
    procs = [pooled_workers("--concurrency", "4", *FAST, listen=True) for _ in range(2)]
    for proc in procs:
        wait_until(partial(listening, proc), what="LISTEN")
    ids: list[int] = []
    for _ in range(4):  # several enqueues while both workers claim
        ids += enqueue_through(bouncer, tmp_path, 50)
    wait_until(lambda: all_completed(ids), timeout=120, what="200 jobs to complete")
    for proc in procs:
        proc.send(signal.SIGTERM)
    for proc in procs:
        assert proc.wait() == 0, proc.log()
    counts = runs(tmp_path)
    assert set(counts) == set(ids)
    assert [job for job, n in counts.items() if n != 1] == []
    for job in Job.objects.filter(pk__in=ids):
        assert len(job.attempts) == 1 and job.lease_epoch == 1, job.attempts
    for proc in procs:
        # Nothing the worker does leans on session state the pooler breaks.
        log = proc.log()
        assert "Traceback" not in log and "prepared statement" not in log, log[-3000:]


def test_an_idle_pooled_worker_wakes_on_notify_over_the_direct_connection(
    pooled_workers, bouncer, tmp_path
):
    proc = pooled_workers("--concurrency", "2", *LONG_POLL, listen=True)
    wait_until(partial(listening, proc), what="LISTEN")
    assert "database 'listen'" in proc.log()
    # Each job is enqueued while the worker sleeps out a 60 s poll: after the
    # previous one completed, the fetch loop polled once more, found nothing and
    # went to sleep. Only a notification can bring the next one in early.
    for _ in range(3):
        [job_id] = enqueue_through(bouncer, tmp_path, 1)
        wait_until(partial(all_completed, [job_id]), timeout=50, what="the notified worker")
        delay = pickup_delay(job_id)
        print(f"NOTIFY pick-up through PgBouncer + direct LISTEN: {delay.total_seconds():.3f} s")
        assert delay < timedelta(seconds=30), delay
    assert sum(runs(tmp_path).values()) == 3


def test_without_a_listen_alias_a_pooled_worker_falls_back_to_polling(
    pooled_workers, bouncer, tmp_path
):
    proc = pooled_workers("--concurrency", "2", "--poll-interval", "1", listen=False)
    # The system check warns at start-up; the probe then finds LISTEN deaf.
    wait_until(lambda: "dispatch_jobs.W070" in proc.log(), what="the W070 warning")
    wait_until(lambda: "heard no notification" in proc.log(), timeout=60, what="the probe")
    assert "Listening for enqueue" not in proc.log()
    ids = enqueue_through(bouncer, tmp_path, 3)
    wait_until(lambda: all_completed(ids), timeout=60, what="polling to pick the jobs up")
    assert runs(tmp_path) == Counter(dict.fromkeys(ids, 1))


def test_an_unreachable_listen_alias_falls_back_to_polling(pooled_workers, bouncer, tmp_path):
    nothing_there = _direct_url(port=free_port())  # a closed loopback port
    proc = pooled_workers(
        "--concurrency", "2", "--poll-interval", "1", listen=True, listen_url=nothing_there
    )
    wait_until(lambda: "LISTEN connection lost" in proc.log(), what="the failed LISTEN")
    ids = enqueue_through(bouncer, tmp_path, 3)
    wait_until(lambda: all_completed(ids), timeout=60, what="polling to pick the jobs up")
    assert runs(tmp_path) == Counter(dict.fromkeys(ids, 1))
    assert "Listening for enqueue" not in proc.log()
