"""Real worker processes: throughput across several workers, exit codes, bounded
modes, registry and summary logs."""

from __future__ import annotations

import time

import pytest

from dispatch_jobs import store
from dispatch_jobs.models import Job, JobState, Usage, Worker
from tests.jobs import tasks
from tests.worker.processes import FAST, wait_until
from tests.worker.support import enqueue

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def test_several_workers_complete_every_job_exactly_once(workers):
    jobs = [enqueue(tasks.add, i, i) for i in range(150)]
    procs = [workers("--burst", "--concurrency", "4", *FAST) for _ in range(3)]
    for proc in procs:
        assert proc.wait() == 0, proc.log()
    rows = Job.objects.filter(pk__in=[j.pk for j in jobs])
    assert rows.filter(state=JobState.COMPLETED).count() == 150
    for row in rows:
        assert row.return_value == 2 * row.args[0]
        assert len(row.attempts) == 1, row.attempts
        assert row.lease_epoch == 1 and row.evict_count == 0
    assert Usage.objects.filter(job_id__in=[j.pk for j in jobs]).count() == 150
    # Each worker deregistered on exit.
    assert not Worker.objects.exists()


def test_without_queue_the_worker_serves_every_queue_tasks_names(workers):
    """tests/settings.py: TASKS["default"]["QUEUES"] = default, high, low, emails."""
    served = [enqueue(tasks.add, 1, 1, queue=name) for name in ("emails", "low", "default")]
    unnamed = enqueue(tasks.add, 2, 2, queue="not-in-tasks")
    proc = workers("--burst", *FAST)
    assert proc.wait() == 0, proc.log()
    assert {Job.objects.get(pk=j.pk).state for j in served} == {JobState.COMPLETED}
    assert Job.objects.get(pk=unnamed.pk).state == JobState.PENDING
    expected = "serving queues default, emails, high, low (from TASKS['default']['QUEUES'])"
    assert expected in proc.log()
    assert Worker.objects.count() == 0


def test_max_jobs_runs_exactly_that_many_then_exits(workers):
    for i in range(5):
        enqueue(tasks.add, i, 0)
    proc = workers("--max-jobs", "3", "--concurrency", "2", *FAST)
    assert proc.wait() == 0, proc.log()
    assert Job.objects.filter(state=JobState.COMPLETED).count() == 3
    assert Job.objects.filter(state=JobState.PENDING).count() == 2


def test_registry_banner_and_summary(workers):
    proc = workers(
        "--concurrency",
        "3",
        "--queue",
        "alpha",
        "--queue",
        "beta,gamma",
        "--budget",
        "cpu=2,memory=1Gi,fpga=1",
        "--summary-interval",
        "0.3",
        "--worker-id",
        "registry-test",
        *FAST,
    )
    wait_until(lambda: Worker.objects.filter(id="registry-test").exists(), what="registration")
    row = Worker.objects.get(id="registry-test")
    assert row.queues == ["alpha", "beta", "gamma"]
    assert row.concurrency == 3
    assert row.capacity == {"cpu": 2000, "memory": 2**30, "fpga": 1}
    # Removed as stale (say, after a long pause): the next heartbeat registers again.
    store.deregister_worker("registry-test")
    wait_until(lambda: Worker.objects.filter(id="registry-test").exists(), what="re-registration")
    wait_until(lambda: "Summary:" in proc.log(), what="a summary line")
    proc.send(15)
    assert proc.wait() == 0
    log = proc.log()
    assert "runjobs registry-test starting: database" in log
    assert "serving queues alpha, beta, gamma (from --queue); concurrency=3" in log
    assert "jobs/s, in flight" in log
    assert not Worker.objects.filter(id="registry-test").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--concurrency", "0"], "--concurrency must be a whole number >= 1"),
        (["--lease-ttl", "1", "--heartbeat", "2"], "must be shorter than --lease-ttl"),
    ],
)
def test_bad_arguments_are_refused_clearly(workers, args, message):
    proc = workers(*args)
    assert proc.wait() != 0
    assert message in proc.log()


def test_retries_follow_the_backoff_then_succeed(workers, tmp_path):
    job = enqueue(tasks.flaky, str(tmp_path), "flaky", 2, max_retries=3)
    workers(*FAST)
    wait_until(lambda: Job.objects.get(pk=job.pk).state == JobState.COMPLETED, what="success")
    job.refresh_from_db()
    assert [a["status"] for a in job.attempts] == ["retrying", "retrying", "completed"]
    assert job.retry_count == 2 and job.evict_count == 0
    assert [a["exception_class"] for a in job.attempts[:2]] == ["builtins.RuntimeError"] * 2
    for before, after in zip(job.attempts, job.attempts[1:], strict=False):
        # Each retry waited for its backoff: it started after the failure ended.
        assert after["started_at"] >= before["finished_at"]
    assert job.return_value == "ok"
    wait_until(lambda: Usage.objects.filter(job_id=job.pk).count() == 3, what="usage")
    assert list(
        Usage.objects.filter(job_id=job.pk).order_by("attempt").values_list("attempt", "status")
    ) == [(1, "retrying"), (2, "retrying"), (3, "completed")]


def test_maintenance_runs_on_one_elected_worker(workers):
    # A 2 s tick: a 6 s leadership lease, so a busy machine cannot make it lapse.
    procs = [
        workers("--worker-id", f"m{i}", *FAST, "--maintenance-interval", "2") for i in range(3)
    ]
    wait_until(lambda: all("starting" in p.log() for p in procs), what="three workers")
    wait_until(
        lambda: sum("Maintenance: now the leader" in p.log() for p in procs) >= 1,
        what="a leader",
    )
    time.sleep(2)  # several maintenance ticks: nobody else may take over
    leaders = [p for p in procs if "Maintenance: now the leader" in p.log()]
    assert len(leaders) == 1
    assert store.leader_of("dispatch_jobs.maintenance") == f"m{procs.index(leaders[0])}"
    # The leader stops: another worker takes over once its lease lapses.
    leaders[0].send(15)
    assert leaders[0].wait() == 0
    wait_until(
        lambda: sum("Maintenance: now the leader" in p.log() for p in procs) == 2,
        what="a new leader",
    )


def test_a_budget_is_never_overcommitted(workers, tmp_path):
    half_gib = 512 * 2**20
    jobs = [enqueue(tasks.hold, str(tmp_path), resources={"memory": half_gib}) for _ in range(3)]
    too_big = enqueue(tasks.add, 1, 1, resources={"memory": 4 * 2**30})
    workers("--concurrency", "4", "--budget", "memory=1Gi,cpu=2", *FAST)
    wait_until(lambda: len(list(tmp_path.glob("start-*"))) == 2, what="two jobs running")
    time.sleep(1)  # several claim cycles: the third must wait for memory to free up
    assert len(list(tmp_path.glob("start-*"))) == 2
    (tmp_path / "release").touch()
    ids = [j.pk for j in jobs]
    wait_until(
        lambda: Job.objects.filter(pk__in=ids, state=JobState.COMPLETED).count() == 3,
        what="all three completed in turn",
    )
    assert Job.objects.get(pk=too_big.pk).state == JobState.PENDING
