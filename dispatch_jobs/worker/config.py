"""Validated worker settings: command-line arguments over ``DISPATCH_JOBS`` defaults.

Every value is checked here, before anything starts, and every error says which
argument was wrong and what would be right.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from .. import rungs
from ..conf import settings
from ..exceptions import InvalidDuration, InvalidResources, QueueNameError, WorkerConfigError
from ..limits import LEASE_TTL_MAX, LEASE_TTL_MIN, to_duration
from ..resources import STANDARD_KEYS, ResourceSet, parse_budget_text
from .queues import ServedQueues, served_queues

WORKER_ID_MAX = 100


def parse_duration(
    option: str,
    value: object,
    *,
    low: timedelta | None = None,
    high: timedelta | None = None,
    zero: bool = False,
) -> timedelta:
    """``2``, ``0.5``, ``"500ms"``, ``"2s"``, ``"1m"``, ``"1h"`` or a timedelta; > 0
    (or zero too, with ``zero``), from ``low`` to ``high`` when given."""
    try:
        return to_duration(value, option, low=low, high=high, zero=zero, numbers=True, text=True)
    except InvalidDuration as exc:
        raise WorkerConfigError(str(exc)) from exc


def default_worker_id() -> str:
    """``host:pid:random``: unique per process, readable in the admin."""
    return f"{socket.gethostname()[:60]}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


@dataclass(frozen=True, kw_only=True)
class WorkerConfig:
    """Everything a worker needs to run, validated."""

    served: ServedQueues
    concurrency: int
    prefetch: int = 0
    budget: ResourceSet = field(default_factory=dict)
    lease_ttl: timedelta
    heartbeat: timedelta
    poll_interval: timedelta
    max_poll_interval: timedelta
    burst: bool = False
    max_jobs: int | None = None
    worker_id: str
    shutdown_grace: timedelta
    max_evictions: int
    maintenance: bool = True
    reclaim_interval: timedelta
    summary_interval: timedelta
    # (host, port) of the Prometheus exposition (--metrics-port); None: no metrics.
    metrics_address: tuple[str, int] | None = None
    # The rung every job runs at here (--execution); jobs needing more are not claimed.
    execution: str = rungs.IN_PROCESS
    # The subprocess rung's children: replaced after this many jobs, or past this
    # resident size (bytes, 0: no ceiling); killed jobs get this long after SIGTERM.
    child_max_jobs: int = 1000
    child_max_rss: int = 0
    child_kill_grace: timedelta = timedelta(seconds=2)

    @property
    def executions(self) -> tuple[str, ...]:
        """The ``Job.execution`` values this worker claims."""
        return rungs.provided_by(self.execution)

    @property
    def queues(self) -> tuple[str, ...]:
        """The queues claimed from; empty means every queue."""
        return self.served.names

    @property
    def custom_keys(self) -> list[str]:
        return sorted(key for key in self.budget if key not in STANDARD_KEYS)

    def describe(self) -> str:
        budget = ",".join(f"{k}={v}" for k, v in sorted(self.budget.items())) or "unbounded"
        return (
            f"serving {self.served.describe()}; concurrency={self.concurrency} "
            f"prefetch={self.prefetch} budget={budget} "
            f"lease_ttl={self.lease_ttl.total_seconds():g}s "
            f"heartbeat={self.heartbeat.total_seconds():g}s "
            f"execution={rungs.describe(self.execution)}"
            + (" burst" if self.burst else "")
            + (f" max_jobs={self.max_jobs}" if self.max_jobs is not None else "")
        )


def build_config(options: Mapping[str, Any]) -> WorkerConfig:
    """A ``WorkerConfig`` from command-line style options (absent or ``None`` means
    the setting's default). Raises ``WorkerConfigError`` on the first bad value."""

    def given(name: str, default: object) -> Any:
        value = options.get(name)
        return default if value is None else value

    try:
        served = served_queues(options.get("queues"), settings.worker_queues)
    except QueueNameError as exc:
        raise WorkerConfigError(str(exc)) from exc
    concurrency = _int("--concurrency", given("concurrency", settings.worker_concurrency), 1)
    prefetch = _int("--prefetch", given("prefetch", settings.worker_prefetch), 0)
    max_jobs = options.get("max_jobs")
    if max_jobs is not None:
        max_jobs = _int("--max-jobs", max_jobs, 1)
    lease_ttl = parse_duration(
        "--lease-ttl", given("lease_ttl", settings.lease_ttl), low=LEASE_TTL_MIN, high=LEASE_TTL_MAX
    )
    heartbeat = parse_duration("--heartbeat", given("heartbeat", settings.heartbeat_interval))
    if heartbeat >= lease_ttl:
        raise WorkerConfigError(
            f"--heartbeat ({heartbeat.total_seconds():g}s) must be shorter than --lease-ttl "
            f"({lease_ttl.total_seconds():g}s), or every lease lapses before it is renewed."
        )
    poll = parse_duration("--poll-interval", given("poll_interval", settings.poll_interval))
    max_poll = parse_duration(
        "--max-poll-interval", given("max_poll_interval", settings.max_poll_interval)
    )
    if max_poll < poll:
        raise WorkerConfigError(
            f"--max-poll-interval ({max_poll.total_seconds():g}s) must be at least "
            f"--poll-interval ({poll.total_seconds():g}s)."
        )
    return WorkerConfig(
        served=served,
        concurrency=concurrency,
        prefetch=prefetch,
        budget=_budget(options.get("budget")),
        lease_ttl=lease_ttl,
        heartbeat=heartbeat,
        poll_interval=poll,
        max_poll_interval=max_poll,
        burst=bool(options.get("burst")),
        max_jobs=max_jobs,
        worker_id=_worker_id(options.get("worker_id")),
        shutdown_grace=_grace(given("shutdown_grace", settings.shutdown_grace)),
        max_evictions=_int("--max-evictions", given("max_evictions", settings.max_evictions), 0),
        maintenance=not options.get("no_maintenance"),
        reclaim_interval=parse_duration(
            "--maintenance-interval", given("maintenance_interval", settings.reclaim_interval)
        ),
        summary_interval=parse_duration(
            "--summary-interval", given("summary_interval", settings.summary_interval)
        ),
        metrics_address=_metrics_address(options.get("metrics_port")),
        execution=_execution(given("execution", settings.worker_execution)),
        child_max_jobs=settings.child_max_jobs,
        child_max_rss=settings.child_max_rss,
        child_kill_grace=settings.child_kill_grace,
    )


def _int(option: str, value: object, low: int) -> int:
    try:
        number = int(str(value)) if not isinstance(value, bool) else None
    except ValueError:
        number = None
    if number is None or number < low:
        raise WorkerConfigError(f"{option} must be a whole number >= {low}, got {value!r}.")
    return number


def _budget(value: object) -> ResourceSet:
    if value in (None, ""):
        return {}
    try:
        if isinstance(value, str):
            return parse_budget_text(value)
        raise InvalidResources(f"expected text such as 'cpu=4,memory=8Gi', got {value!r}")
    except InvalidResources as exc:
        raise WorkerConfigError(f"--budget: {exc}") from exc


def _execution(value: object) -> str:
    if not rungs.is_rung(value):
        raise WorkerConfigError(
            f"--execution must be one of {', '.join(rungs.RUNGS)}, got {value!r}."
        )
    return str(value)


def _worker_id(value: object) -> str:
    if value in (None, ""):
        return default_worker_id()
    text = str(value)
    if len(text) > WORKER_ID_MAX or not text.strip():
        raise WorkerConfigError(
            f"--worker-id must be 1 to {WORKER_ID_MAX} non-blank characters, got {value!r}."
        )
    return text


def _grace(value: object) -> timedelta:
    return parse_duration("--shutdown-grace", value, zero=True)  # zero: hand back at once


def _metrics_address(value: object) -> tuple[str, int] | None:
    """``PORT`` (every interface) or ``HOST:PORT``; port 0 picks a free one."""
    if value in (None, ""):
        return None
    host, _, port = str(value).strip().rpartition(":")
    host = host.strip("[]") or "0.0.0.0"
    if not port.isdigit() or int(port) > 65535:
        raise WorkerConfigError(
            f"--metrics-port must be PORT or HOST:PORT with a port from 0 to 65535, got {value!r}."
        )
    return host, int(port)
