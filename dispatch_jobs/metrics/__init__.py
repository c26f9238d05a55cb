"""Prometheus metrics (the optional extra ``metrics``; docs/observability.md).

Two sources, one naming scheme (``dispatch_jobs_*``):

- ``fleet``: gauges read from the database on each scrape (queue depth and
  oldest-ready age, paused queues, live workers), by bounded queries. Served
  by the Django view (``views.metrics_view``, ``dispatch_jobs.metrics.urls``)
  and by the worker that currently runs maintenance.
- ``dispatch_jobs.worker.metrics``: what one ``runjobs`` process did (jobs
  started, completed, failed, retried per task; run and wait durations), served
  by ``runjobs --metrics-port``.

Nothing here imports ``prometheus_client`` at module level: the package works
without the extra, and asking for metrics without it raises ``MetricsUnavailable``.
"""

from __future__ import annotations

from types import ModuleType

from ..exceptions import MetricsUnavailable


def prometheus_client(what: str) -> ModuleType:
    """The ``prometheus_client`` module, or ``MetricsUnavailable`` naming ``what``
    wanted it and the extra to install."""
    try:
        import prometheus_client as module
    except ImportError as exc:
        raise MetricsUnavailable(what) from exc
    return module
