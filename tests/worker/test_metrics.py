"""``runjobs --metrics-port``: a real worker process serves its counters and
histograms (and, while it leads maintenance, the fleet's gauges); the exposition
is read with prometheus-client's own parser."""

from __future__ import annotations

import re
import socket
import sys
import urllib.request

import pytest
from django.core.management import CommandError, call_command
from prometheus_client.parser import text_string_to_metric_families

from dispatch_jobs.exceptions import WorkerConfigError
from dispatch_jobs.models import Job, JobState
from dispatch_jobs.worker.config import build_config
from tests.jobs import tasks
from tests.worker.processes import FAST, WorkerProcess, wait_until
from tests.worker.support import enqueue

ADD = "tests.jobs.tasks.add"
BROKEN = "tests.jobs.tasks.raise_value_error"
GONE = "tests.jobs.tasks.raise_permanent"


def metrics_url(worker: WorkerProcess) -> str:
    wait_until(lambda: "Metrics on http://" in worker.log(), what="the metrics address")
    match = re.search(r"Metrics on (http://\S+)", worker.log())
    assert match is not None
    return match.group(1)


def scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of the exposition, keyed by (sample name, sorted labels)."""
    with urllib.request.urlopen(url, timeout=30) as response:
        text = response.read().decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: dict, name: str, **labels: str) -> float | None:
    return samples.get((name, tuple(sorted(labels.items()))))


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_a_worker_serves_its_job_counters_and_histograms(workers):
    for i in range(3):
        enqueue(tasks.add, i, i)
    broken = enqueue(tasks.raise_value_error, "boom", max_retries=1)
    gone = enqueue(tasks.raise_permanent, "gone")
    worker = workers("--metrics-port", "127.0.0.1:0", "--concurrency", "2", *FAST)
    url = metrics_url(worker)
    wait_until(
        lambda: (
            Job.objects.filter(state=JobState.COMPLETED).count() == 3
            and Job.objects.get(pk=broken.pk).state == JobState.FAILED
            and Job.objects.get(pk=gone.pk).state == JobState.FAILED
        ),
        what="every job settled",
    )
    # The counters move after the completer's write, just after the rows show it.
    wait_until(
        lambda: (
            value(scrape(url), "dispatch_jobs_jobs_failed_total", task=BROKEN, queue="default")
            == 1.0
        ),
        what="the failure counted",
    )
    samples = scrape(url)
    add = {"task": ADD, "queue": "default"}
    assert value(samples, "dispatch_jobs_jobs_started_total", **add) == 3.0
    assert value(samples, "dispatch_jobs_jobs_completed_total", **add) == 3.0
    assert value(samples, "dispatch_jobs_job_run_duration_seconds_count", **add) == 3.0
    assert value(samples, "dispatch_jobs_job_wait_duration_seconds_count", **add) == 3.0
    assert value(samples, "dispatch_jobs_job_run_duration_seconds_sum", **add) > 0
    broken_labels = {"task": BROKEN, "queue": "default"}
    # Attempt 1 failed and was retried; attempt 2 used the last retry and failed.
    assert value(samples, "dispatch_jobs_jobs_started_total", **broken_labels) == 2.0
    assert value(samples, "dispatch_jobs_jobs_retried_total", **broken_labels) == 1.0
    assert value(samples, "dispatch_jobs_jobs_failed_total", **broken_labels) == 1.0
    assert value(samples, "dispatch_jobs_jobs_failed_total", task=GONE, queue="default") == 1.0
    assert value(samples, "dispatch_jobs_jobs_retried_total", task=GONE, queue="default") is None
    assert value(samples, "dispatch_jobs_worker_concurrency") == 2.0
    assert value(samples, "dispatch_jobs_worker_inflight_jobs") == 0.0
    # The process collector of prometheus-client's default registry is served too.
    assert value(samples, "process_resident_memory_bytes") is not None
    # This worker runs maintenance (the only one): it reports the fleet as well.
    wait_until(lambda: value(scrape(url), "dispatch_jobs_fleet_up") == 1.0, what="the fleet gauges")
    samples = scrape(url)
    assert value(samples, "dispatch_jobs_queue_ready_jobs", queue="default") == 0.0
    assert value(samples, "dispatch_jobs_workers_live", state="active") == 1.0
    worker.send(15)
    assert worker.wait() == 0, worker.log()


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_a_worker_outside_maintenance_leaves_the_fleet_gauges_to_the_leader(workers):
    enqueue(tasks.add, 1, 1)
    worker = workers("--metrics-port", "127.0.0.1:0", "--no-maintenance", *FAST)
    url = metrics_url(worker)
    wait_until(lambda: Job.objects.filter(state=JobState.COMPLETED).count() == 1, what="the job")
    wait_until(
        lambda: (
            value(scrape(url), "dispatch_jobs_jobs_completed_total", task=ADD, queue="default")
            == 1.0
        ),
        what="the completion counted",
    )
    names = {name for name, _labels in scrape(url)}
    assert not any(
        name.startswith(("dispatch_jobs_queue_", "dispatch_jobs_fleet")) for name in names
    )
    worker.send(15)
    assert worker.wait() == 0, worker.log()


@pytest.mark.django_db
def test_a_busy_port_is_one_clear_error():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(
            CommandError, match=rf"--metrics-port: cannot listen on 127.0.0.1:{port}"
        ):
            call_command("runjobs", "--burst", "--metrics-port", f"127.0.0.1:{port}", verbosity=0)


@pytest.mark.django_db
def test_without_prometheus_client_the_flag_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "prometheus_client", None)  # as if not installed
    with pytest.raises(CommandError, match=re.escape("pip install 'dispatch-jobs[metrics]'")):
        call_command("runjobs", "--burst", "--metrics-port", "0", verbosity=0)


@pytest.mark.parametrize(
    ("given", "address"),
    [
        ("9100", ("0.0.0.0", 9100)),
        ("127.0.0.1:0", ("127.0.0.1", 0)),
        ("[::1]:9100", ("::1", 9100)),
        (None, None),
    ],
)
def test_metrics_port_values(given, address):
    assert build_config({"metrics_port": given}).metrics_address == address


@pytest.mark.parametrize("given", ["http", "70000", "host:", "-1", "9100\x00"])
def test_bad_metrics_ports_are_refused(given):
    with pytest.raises(WorkerConfigError, match="--metrics-port must be PORT or HOST:PORT"):
        build_config({"metrics_port": given})


def test_without_the_flag_the_pool_holds_no_metrics():
    # The pool's per-job hooks are skipped on `self.metrics is None`: nothing is
    # imported, registered or counted.
    from dispatch_jobs.worker import metrics as worker_metrics

    config = build_config({})
    assert config.metrics_address is None
    assert worker_metrics.start(config, lambda: 0, lambda: False) is None
