"""What one ``runjobs`` process did, for Prometheus: ``runjobs --metrics-port``.

The pool calls ``started`` when a handler starts and ``settled`` when the
completer has written an outcome; both only when the port was asked for (the
pool holds None otherwise, so a worker without metrics does no per-job work).
Each is a few label lookups and increments, no I/O: a scrape reads the values
from the exposition server's own thread.

The port serves prometheus-client's default registry: these metrics, the
process collectors (CPU, memory, open files), any metric the project's own
code registers in the worker, and the fleet's gauges while this worker holds
the maintenance leadership (``dispatch_jobs.metrics.fleet``).

Labels: ``task`` (the job's name: the task's import path or alias) and
``queue``. Both come from the project's own tasks and queues, so their number is
that of the project's tasks, not of jobs.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.utils import timezone

from ..exceptions import MetricsUnavailable, WorkerConfigError
from ..metrics import prometheus_client
from ..models import Job, JobState
from .config import WorkerConfig

if TYPE_CHECKING:
    from .executor import Attempt

logger = logging.getLogger("dispatch_jobs.worker")

# Jobs run for milliseconds to hours, and wait as long: buckets from 5 ms to 1 h.
DURATION_BUCKETS = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
    600.0, 1800.0, 3600.0,
)  # fmt: skip
LABELS = ("task", "queue")


class _Instruments:
    """The metric objects, made once per process: the default registry refuses
    a second metric of the same name (a test runs several pools in one process)."""

    def __init__(self, client: Any) -> None:
        counter, histogram, gauge = client.Counter, client.Histogram, client.Gauge
        self.started = counter(
            "dispatch_jobs_jobs_started", "Attempts whose handler started.", LABELS
        )
        self.completed = counter(
            "dispatch_jobs_jobs_completed", "Attempts that succeeded (job completed).", LABELS
        )
        self.retried = counter(
            "dispatch_jobs_jobs_retried", "Failed attempts with a retry scheduled.", LABELS
        )
        self.failed = counter(
            "dispatch_jobs_jobs_failed",
            "Failed attempts that left the job failed (the dead letter).",
            LABELS,
        )
        self.run = histogram(
            "dispatch_jobs_job_run_duration_seconds",
            "Handler wall time of an attempt whose outcome was written, any outcome.",
            LABELS,
            buckets=DURATION_BUCKETS,
        )
        self.wait = histogram(
            "dispatch_jobs_job_wait_duration_seconds",
            "From when a job was due (run_at: its enqueue, schedule or retry time) to "
            "its handler's start.",
            LABELS,
            buckets=DURATION_BUCKETS,
        )
        self.inflight = gauge(
            "dispatch_jobs_worker_inflight_jobs",
            "Jobs this worker holds: running or claimed ahead (prefetch).",
        )
        self.concurrency = gauge(
            "dispatch_jobs_worker_concurrency", "This worker's executor threads."
        )


_instruments: _Instruments | None = None
_lock = threading.Lock()


def _instruments_for(client: Any) -> _Instruments:
    global _instruments
    with _lock:
        if _instruments is None:
            _instruments = _Instruments(client)
            from ..metrics.fleet import FleetCollector

            client.REGISTRY.register(FleetCollector(_fleet_enabled, close_connection=True))
        return _instruments


# The pool whose leadership decides whether this process reports the fleet.
_leader: Callable[[], bool] = lambda: False  # noqa: E731


def _fleet_enabled() -> bool:
    return _leader()


class WorkerMetrics:
    """The per-job hooks, and the exposition server they are read through."""

    def __init__(self, instruments: _Instruments, server: Any, address: str) -> None:
        self.instruments = instruments
        self.server = server
        self.address = address

    def started(self, job: Job) -> None:
        labels = (job.name, job.queue)
        self.instruments.started.labels(*labels).inc()
        if job.run_at is not None:
            waited = (timezone.now() - job.run_at).total_seconds()
            self.instruments.wait.labels(*labels).observe(max(waited, 0.0))

    def settled(self, attempt: Attempt) -> None:
        job = attempt.job
        labels = (job.name, job.queue)
        state = attempt.verdict.state if attempt.verdict else None
        if state == JobState.COMPLETED:
            self.instruments.completed.labels(*labels).inc()
        elif state == JobState.RETRYING:
            self.instruments.retried.labels(*labels).inc()
        elif state == JobState.FAILED:
            self.instruments.failed.labels(*labels).inc()
        self.instruments.run.labels(*labels).observe(attempt.outcome.wall_time)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def start(
    config: WorkerConfig, inflight: Callable[[], int], is_leader: Callable[[], bool]
) -> WorkerMetrics | None:
    """Serve metrics on ``config.metrics_address`` (None: metrics are off, and
    None is returned). Raises ``WorkerConfigError`` when prometheus-client is
    missing or the port cannot be bound."""
    global _leader
    if config.metrics_address is None:
        return None
    host, port = config.metrics_address
    try:
        client = prometheus_client("runjobs --metrics-port")
    except MetricsUnavailable as exc:
        raise WorkerConfigError(str(exc)) from exc
    instruments = _instruments_for(client)
    instruments.inflight.set_function(inflight)
    instruments.concurrency.set(config.concurrency)
    _leader = is_leader
    try:
        server, _thread = client.start_http_server(port, addr=host)
    except OSError as exc:
        raise WorkerConfigError(
            f"--metrics-port: cannot listen on {host}:{port} ({exc.strerror or exc}). "
            "Give each worker on a host its own port, or 0 for any free one."
        ) from exc
    bound_host, bound_port = server.server_address[:2]
    address = f"http://{bound_host}:{bound_port}/metrics"
    logger.info("Metrics on %s", address)
    return WorkerMetrics(instruments, server, address)
