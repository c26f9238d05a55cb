"""One job, one fate: a job's fault is that job's outcome and nobody else's.

Each test runs real ``runjobs`` processes (or the real completer) on the test
database, puts one kind of bad job among ordinary ones, and counts what happened
to the ordinary ones: none re-run, none failed, none left behind.
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.utils import timezone

from dispatch_jobs import store
from dispatch_jobs.models import Job, JobState, Quarantine
from dispatch_jobs.worker.completer import persist
from dispatch_jobs.worker.executor import Attempt
from dispatch_jobs.worker.outcomes import Kind, Outcome, settle
from tests.jobs import tasks
from tests.stored_json import UNREADABLE, deepest_nesting, set_json_text
from tests.worker.processes import FAST, WorkerProcess, wait_until
from tests.worker.support import enqueue

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

Workers = Callable[..., WorkerProcess]


def lines(directory: Path, name: str) -> int:
    path = directory / name
    return len(path.read_text().splitlines()) if path.exists() else 0


def ordinary_jobs(directory: Path, count: int, seconds: float = 0.0, **fields: object) -> list[Job]:
    return [
        enqueue(tasks.ordinary, str(directory), f"o{i}", seconds, **fields) for i in range(count)
    ]


def assert_ran_exactly_once(directory: Path, jobs: list[Job]) -> None:
    """The innocents' count: each completed, started once, finished once."""
    for job in jobs:
        row = Job.objects.get(pk=job.pk)
        key = row.args[1]
        assert row.state == JobState.COMPLETED, (key, row.state, row.last_error)
        assert (lines(directory, f"start-{key}"), lines(directory, f"done-{key}")) == (1, 1), key
        assert row.evict_count == 0 and row.retry_count == 0, key


def result_of(job: Job):  # noqa: ANN201 - a TaskResult
    from dispatch_jobs.compat import default_task_backend

    return default_task_backend.get_result(str(job.pk))


# -- 1. unstorable outcomes ---------------------------------------------------------------


def test_unstorable_return_values_and_messages_fail_only_their_own_jobs(
    workers: Workers, tmp_path: Path
) -> None:
    innocents = ordinary_jobs(tmp_path, 30)
    returns = {
        kind: enqueue(tasks.return_unstorable, str(tmp_path), kind) for kind in tasks.UNSTORABLE
    }
    raises = {
        kind: enqueue(tasks.raise_unstorable, str(tmp_path), kind, max_retries=0)
        for kind in ("nul", "surrogate")
    }
    worker = workers(
        "--burst", "--concurrency", "4", "--prefetch", "20", "--max-evictions", "2", *FAST
    )
    assert worker.wait(120) == 0, worker.log()[-3000:]

    assert_ran_exactly_once(tmp_path, innocents)
    expected = {
        "nan": "NaN at the top",
        "inf": "Infinity at [1]",
        "nul": "NUL character (\\x00) at ['text']",
        "surrogate": "lone surrogate",
        "deep": "nesting deeper than",
    }
    for kind, job in returns.items():
        row = Job.objects.get(pk=job.pk)
        assert row.state == JobState.FAILED, kind
        assert "not storable" in row.last_error and expected[kind] in row.last_error, row.last_error
        assert lines(tmp_path, f"start-{kind}") == 1, kind  # recorded once, never re-run
        assert len(result_of(job).errors) == 1
    for kind, job in raises.items():
        row = Job.objects.get(pk=job.pk)
        assert row.state == JobState.FAILED and row.evict_count == 0, kind
        escaped = "a\\x00b" if kind == "nul" else "\\ud800"
        assert escaped in row.last_error, row.last_error  # the real cause, made readable
        assert lines(tmp_path, f"start-raise-{kind}") == 1


def _attempt(job: Job, value: object) -> Attempt:
    """A successful attempt of a claimed ``job`` returning ``value``, as if the
    executor's own check had been bypassed (what the database then refuses)."""
    now = timezone.now()
    outcome = Outcome(kind=Kind.SUCCESS, started_at=now, finished_at=now, return_value=value)
    return Attempt(job, job.lease_epoch, outcome, settle(job, outcome, "w1"))


@pytest.mark.parametrize("bad", [float("nan"), "\ud800"], ids=["nan", "surrogate"])
def test_a_batch_the_database_refuses_is_split_and_only_the_refused_row_fails(bad: object) -> None:
    for _ in range(9):
        enqueue(tasks.add, 1, 1)
    claimed = store.claim_jobs(
        store.ClaimOptions(
            queues=["default"], limit=9, worker_id="w1", lease_ttl=timedelta(minutes=1)
        )
    )
    attempts = [_attempt(job, bad if i == 4 else i) for i, job in enumerate(claimed)]
    assert persist(attempts, "w1") == set()  # nothing discarded: every fate decided
    refused = claimed[4].pk
    for i, job in enumerate(claimed):
        row = Job.objects.get(pk=job.pk)
        if job.pk == refused and row.state == JobState.COMPLETED:
            # This database stores it after all (SQLite keeps "\ud800" as escaped
            # JSON text): then it must come back exactly as returned.
            assert row.return_value == bad
        elif job.pk == refused:
            assert row.state == JobState.FAILED
            assert row.last_error.startswith("OutcomeNotStorable: the database refused")
            assert row.attempts[-1]["status"] == "failed" and row.return_value is None
        else:
            assert (row.state, row.return_value) == (JobState.COMPLETED, i)


# -- 2. undecodable rows ------------------------------------------------------------------


def test_undecodable_claimed_rows_fail_alone_and_the_worker_keeps_running(
    workers: Workers, tmp_path: Path, admin_client
) -> None:
    innocents = ordinary_jobs(tmp_path, 20)
    bad = {
        "resources": {"memory": "2Gi"},
        "resources ": "a string",  # the trailing space keeps the key apart
        "attempts": 5,
        "payload": [1, 2],
        "lease_ttl": timedelta(days=99_999_999),
    }
    broken: dict[str, Job] = {}
    for column, value in bad.items():
        job = enqueue(tasks.add, 1, 2)
        Job.objects.filter(pk=job.pk).update(**{column.strip(): value})
        broken[column] = job
    worker = workers("--burst", "--concurrency", "2", "--prefetch", "10", *FAST)
    assert worker.wait(120) == 0, worker.log()[-3000:]
    assert_ran_exactly_once(tmp_path, innocents)
    for column, job in broken.items():
        row = Job.objects.get(pk=job.pk)
        assert row.state == JobState.FAILED, (column, row.state)
        assert f"'{column.strip()}'" in row.last_error, row.last_error  # names the column
        assert row.evict_count == 0 and len(row.attempts) >= 1
        assert row.attempts[-1]["exception_class"].endswith(("UndecodableJob", "InvalidPayload"))
        page = admin_client.get(f"/admin/dispatch_jobs/job/{job.pk}/change/")
        assert page.status_code == 200, column
        assert result_of(job).id == str(job.pk), column  # its result can be looked up


# The columns the worker checks before it runs a job (``problem_with``): too deep
# for Python's decoder there, the job fails naming the column.
CHECKED_JSON = ("payload", "attempts", "resources", "artifact_bindings")


def _python_decodes(text: str) -> bool:
    try:
        json.loads(text)
    except RecursionError:
        return False
    return True


@pytest.mark.parametrize(
    "column",
    [*CHECKED_JSON, "resource_limits", "return_value", "trace_context"],
)
def test_json_nested_too_deep_to_decode_fails_its_own_job_alone(
    workers: Workers, tmp_path: Path, admin_client, column: str
) -> None:
    innocents = ordinary_jobs(tmp_path, 12)
    deep = enqueue(tasks.add, 1, 2)
    nested = deepest_nesting()
    if not set_json_text(Job, deep.pk, column, nested):
        pytest.skip(f"{connection.vendor} refuses JSON this deep: no such row can be stored")
    worker = workers("--burst", "--concurrency", "2", "--prefetch", "20", *FAST)
    assert worker.wait(120) == 0, worker.log()[-3000:]
    assert_ran_exactly_once(tmp_path, innocents)
    row = Job.objects.get(pk=deep.pk)
    assert row.state in (JobState.COMPLETED, JobState.FAILED), row.state
    assert row.evict_count == 0
    if column in CHECKED_JSON and not _python_decodes(nested):
        assert row.state == JobState.FAILED
        assert f"'{column}'" in row.last_error, row.last_error
    # What reads the row afterwards reads it too: the admin's pages, the result.
    assert admin_client.get(f"/admin/dispatch_jobs/job/{deep.pk}/change/").status_code == 200
    assert admin_client.get("/admin/dispatch_jobs/job/").status_code == 200
    assert result_of(deep).id == str(deep.pk)


def test_a_value_the_driver_cannot_read_fails_its_own_job_alone(
    workers: Workers, tmp_path: Path
) -> None:
    """One claimed row holding a value its driver or Django cannot convert must
    not fail the claim of the rows beside it: the claim reads the rows apart and
    the worker fails that job alone, naming the column."""
    innocents = ordinary_jobs(tmp_path, 12)
    table = connection.ops.quote_name(Job._meta.db_table)
    odd: dict[str, Job] = {}
    for column, literal in UNREADABLE[connection.vendor]:
        job = enqueue(tasks.add, 1, 2)
        with connection.cursor() as cursor:
            quoted = connection.ops.quote_name(column)
            cursor.execute(f"UPDATE {table} SET {quoted} = {literal} WHERE id = %s", [job.pk])
        odd[column] = job
    worker = workers("--burst", "--concurrency", "2", "--prefetch", "30", *FAST)
    assert worker.wait(120) == 0, worker.log()[-3000:]
    assert_ran_exactly_once(tmp_path, innocents)
    for column, job in odd.items():
        state, error, evictions = (
            Job.objects.filter(pk=job.pk).values_list("state", "last_error", "evict_count").get()
        )
        assert evictions == 0, column
        if connection.vendor == "mysql":
            # The driver reads a zero date as None: nothing unreadable, the job runs.
            assert state == JobState.COMPLETED, (column, state, error)
        else:
            assert state == JobState.FAILED, (column, state)
            assert f"column '{column}' could not be read" in error, error


# -- 4. a row locked elsewhere ------------------------------------------------------------


def test_one_locked_row_never_stalls_the_renewal_of_the_others(
    workers: Workers, tmp_path: Path
) -> None:
    if not connection.features.has_select_for_update_skip_locked:
        pytest.skip("SQLite locks the whole database, never one row: nothing to skip")
    jobs = [enqueue(tasks.hold, str(tmp_path)) for _ in range(4)]
    workers("--concurrency", "4", *FAST)
    wait_until(lambda: len(list(tmp_path.glob("start-*"))) == 4, what="four jobs started")
    locked = jobs[0]
    other = connections.create_connection(DEFAULT_DB_ALIAS)
    try:
        other.set_autocommit(False)
        with other.cursor() as cursor:
            table = other.ops.quote_name(Job._meta.db_table)
            cursor.execute(f"SELECT id FROM {table} WHERE id = %s FOR UPDATE", [locked.pk])
        time.sleep(4)  # two lease TTLs of the worker (--lease-ttl 2)
        ahead = Job.objects.filter(pk__in=[j.pk for j in jobs[1:]])
        # The others were renewed meanwhile: their leases still run into the future.
        assert all(j.lease_expires_at > store.db.database_now() for j in ahead)
    finally:
        other.rollback()
        other.close()
    (tmp_path / "release").touch()
    wait_until(
        lambda: (
            Job.objects.filter(pk__in=[j.pk for j in jobs[1:]], state=JobState.COMPLETED).count()
            == 3
        ),
        what="the three untouched jobs completed",
    )
    for job in jobs[1:]:
        assert Job.objects.get(pk=job.pk).evict_count == 0
        assert not (tmp_path / f"cancelled-{job.pk}").exists()
        assert lines(tmp_path, f"start-{job.pk}") == 1


# -- 5. a crashing handler ----------------------------------------------------------------


def test_a_job_that_kills_its_worker_is_failed_alone_and_its_neighbours_finish_once(
    workers: Workers, tmp_path: Path
) -> None:
    culprit = enqueue(tasks.exit_own_process, priority=5)
    innocents = ordinary_jobs(tmp_path, 20, 0.1)
    args = ("--concurrency", "2", "--max-evictions", "2", *FAST)
    restarts = 0
    end = time.monotonic() + 180

    def settled() -> bool:
        rows = Job.objects.filter(pk__in=[culprit.pk, *(j.pk for j in innocents)])
        return not rows.exclude(state__in=[JobState.COMPLETED, JobState.FAILED]).exists()

    while not settled() and time.monotonic() < end:  # a supervisor: restart the dead
        worker = workers(*args)
        wait_until(lambda: not worker.alive() or settled(), timeout=60, what="death or the end")  # noqa: B023
        if not worker.alive():
            assert worker.wait() == 3  # the culprit's os._exit(3)
            restarts += 1
        else:
            worker.send(signal.SIGTERM)
            worker.wait(30)
    assert settled()
    for job in innocents:  # each finished exactly once, none failed
        row = Job.objects.get(pk=job.pk)
        key = row.args[1]
        assert row.state == JobState.COMPLETED and lines(tmp_path, f"done-{key}") == 1, key
        assert row.lone_evictions == 0, key
    row = Job.objects.get(pk=culprit.pk)
    assert row.state == JobState.FAILED and "failed as poison" in row.last_error
    assert row.lone_evictions == 3 and restarts == row.evict_count
    errors = result_of(culprit).errors
    assert len(errors) == row.evict_count >= 3
    assert all(e.exception_class_path == "dispatch_jobs.exceptions.WorkerLost" for e in errors)


# -- 6. KeyboardInterrupt from a handler --------------------------------------------------


def test_keyboard_interrupt_from_a_handler_is_a_failed_attempt_that_obeys_max_retries(
    workers: Workers, tmp_path: Path
) -> None:
    innocents = ordinary_jobs(tmp_path, 10)
    job = enqueue(tasks.interrupt, str(tmp_path), max_retries=1)
    worker = workers("--burst", "--concurrency", "2", *FAST)
    assert worker.wait(60) == 0, worker.log()[-3000:]
    row = Job.objects.get(pk=job.pk)
    # One retry allowed: the burst ends with the retry waiting its backoff, or, when
    # the jittered backoff was short enough, run and failed for good.
    assert row.retry_count == 1 and row.evict_count == 0, row.state
    runs = lines(tmp_path, "start-interrupt")
    assert (row.state, runs) in ((JobState.RETRYING, 1), (JobState.FAILED, 2))
    assert [a["exception_class"] for a in row.attempts] == ["builtins.KeyboardInterrupt"] * runs
    assert row.last_error == "KeyboardInterrupt"
    assert_ran_exactly_once(tmp_path, innocents)


def test_testing_run_jobs_records_a_keyboard_interrupt_instead_of_raising(tmp_path: Path) -> None:
    from dispatch_jobs.testing import run_jobs

    job = enqueue(tasks.interrupt, str(tmp_path), max_retries=0)
    assert run_jobs() == 1
    row = Job.objects.get(pk=job.pk)
    assert row.state == JobState.FAILED
    assert row.attempts[-1]["exception_class"] == "builtins.KeyboardInterrupt"


# -- 9. exact reclaim, with real workers --------------------------------------------------


def test_a_killed_workers_jobs_come_back_without_a_start_and_run_alone(
    workers: Workers, tmp_path: Path
) -> None:
    jobs = [enqueue(tasks.hold, str(tmp_path)) for _ in range(2)]
    victim = workers("--concurrency", "2", *FAST)
    wait_until(lambda: len(list(tmp_path.glob("start-*"))) == 2, what="both started")
    victim.send(signal.SIGKILL)
    victim.wait()
    # No worker is left to run maintenance: reclaim as its leader would.
    reclaimed: list[Job] = []
    wait_until(
        lambda: reclaimed.extend(store.reclaim_expired_leases(10)) or len(reclaimed) == 2,
        what="both reclaimed",
    )
    for job in jobs:
        row = Job.objects.get(pk=job.pk)
        assert row.started_at is None and row.quarantine == Quarantine.SUSPECT
        assert row.attempts[-1]["status"] == "evicted" and row.attempts[-1]["started_at"]
    (tmp_path / "release").touch()
    workers("--concurrency", "2", *FAST)
    wait_until(
        lambda: (
            Job.objects.filter(pk__in=[j.pk for j in jobs], state=JobState.COMPLETED).count() == 2
        ),
        what="both completed",
    )
    for job in jobs:
        row = Job.objects.get(pk=job.pk)
        assert row.quarantine == Quarantine.NONE and row.lone_evictions == 0


# -- 8. liveness: a stop request while the database is away -------------------------------


def test_sigterm_while_the_database_is_away_honours_the_shutdown_grace(
    workers: Workers, tmp_path: Path
) -> None:
    import os
    from urllib.parse import urlsplit, urlunsplit

    from tests.worker.proxy import Proxy

    url = os.environ.get("DATABASE_URL", "")
    if connection.vendor == "sqlite":
        pytest.skip("SQLite is a file in the worker's own process: it cannot go away")
    parts = urlsplit(url)
    proxy = Proxy(parts.hostname or "127.0.0.1", parts.port or 0)
    through = urlunsplit(parts._replace(netloc=f"{parts.username or ''}@127.0.0.1:{proxy.port}"))
    job = enqueue(tasks.hold, str(tmp_path))
    worker = workers(
        "--concurrency", "1", "--shutdown-grace", "2", *FAST, env={"DATABASE_URL": through}
    )
    wait_until(lambda: (tmp_path / f"start-{job.pk}").exists(), what="the job started")
    proxy.cut()
    time.sleep(0.5)
    worker.send(signal.SIGTERM)
    # Before: the hand-back and the last writes waited 30 s each for the database.
    assert worker.wait(15) == 0, worker.log()[-3000:]
    assert "Could not hand jobs back" in worker.log()

    # Nothing is lost: the lease lapses and the job comes back.
    def reclaimed() -> bool:
        store.reclaim_expired_leases(10)
        return Job.objects.get(pk=job.pk).state == JobState.PENDING

    wait_until(reclaimed, what="the job reclaimed")
