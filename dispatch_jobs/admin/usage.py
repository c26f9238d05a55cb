"""Usage: the per-attempt records, as a keyset-paged list, and a per-task summary
(count, failure rate, p50/p95 wall time) over a time window, with the declared
and estimated resources per task and input-size bucket (``admin.estimates``).

The summary reads the window's newest ``ADMIN_SCAN_CAP`` records through the
recorded_at index and computes percentiles in Python, the same on every
database (SQLite and MariaDB have no percentile aggregate).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import path

from .. import database, estimates
from ..conf import settings
from ..exceptions import QueryTooBroad
from ..models import JobState, Usage
from ..store import reads
from . import display
from .estimates import estimate_summary
from .paging import KeysetModelAdmin, SortKey
from .params import guarded
from .readonly import ReadOnlyAdmin
from .safety import bounded_queries

USAGE_SORT_KEYS = (SortKey("-id", "Newest first", None, True, "primary key"),)
WINDOWS = {
    "1h": ("Last hour", timedelta(hours=1)),
    "24h": ("Last 24 hours", timedelta(days=1)),
    "7d": ("Last 7 days", timedelta(days=7)),
    "30d": ("Last 30 days", timedelta(days=30)),
}
DEFAULT_WINDOW = "24h"


@dataclass
class TaskUsage:
    name: str
    count: int
    failures: int
    p50: timedelta
    p95: timedelta

    @property
    def failure_rate(self) -> float:
        return self.failures / self.count if self.count else 0.0


def percentile(ordered: list[timedelta], fraction: float) -> timedelta:
    """Nearest-rank percentile of an ascending, non-empty list."""
    rank = max(1, -(-len(ordered) * fraction // 1))  # ceil without float drift
    return ordered[min(int(rank), len(ordered)) - 1]


def usage_summary(window: timedelta, scan_cap: int) -> tuple[list[TaskUsage], bool]:
    """Per task over the last ``window`` (database clock), busiest first, and
    whether the scan cap cut it short."""
    rows = list(
        reads.usage()
        .filter(recorded_at__gte=database.now_minus(window))
        .order_by("-recorded_at")
        .values_list("name", "status", "wall_time")[: scan_cap + 1]
    )
    capped = len(rows) > scan_cap
    by_task: dict[str, tuple[list[timedelta], list[int]]] = {}
    for name, status, wall in rows[:scan_cap]:
        times, failures = by_task.setdefault(name, ([], [0]))
        times.append(wall)
        if status != JobState.COMPLETED:
            failures[0] += 1
    summary = []
    for name, (times, failures) in by_task.items():
        times.sort()
        summary.append(
            TaskUsage(
                name, len(times), failures[0], percentile(times, 0.5), percentile(times, 0.95)
            )
        )
    summary.sort(key=lambda t: (-t.count, t.name))
    return summary, capped


@admin.register(Usage)
class UsageAdmin(ReadOnlyAdmin, KeysetModelAdmin):
    """Attempt records; retention (``purge_usage``) removes them, not operators."""

    list_display = (
        "id",
        "name",
        "job_id",
        "attempt",
        "status",
        "wall",
        "cpu",
        "peak_rss",
        "worker_id",
        "recorded",
    )
    empty_value_display = display.EMPTY

    @admin.display(description="wall time")
    def wall(self, usage: Usage) -> str:
        return display.duration(usage.wall_time)

    @admin.display(description="CPU time")
    def cpu(self, usage: Usage) -> str:
        return display.duration(usage.cpu_time)

    @admin.display(description="recorded")
    def recorded(self, usage: Usage) -> str:
        return display.moment(usage.recorded_at)

    sort_keys = USAGE_SORT_KEYS
    change_list_template = "dispatch_jobs/admin/usage/change_list.html"

    def get_queryset(self, request: HttpRequest) -> QuerySet[Usage]:
        return reads.usage()

    def get_urls(self) -> list[Any]:
        wrap = self.admin_site.admin_view
        return [
            path("summary/", wrap(guarded(self.summary_view)), name="dispatch_jobs_usage_summary"),
            *super().get_urls(),
        ]

    def summary_view(self, request: HttpRequest) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        key = request.GET.get("window", DEFAULT_WINDOW)
        key = key if key in WINDOWS else DEFAULT_WINDOW
        scan_cap = settings.admin_scan_cap
        try:
            with bounded_queries():
                rows, capped = usage_summary(WINDOWS[key][1], scan_cap)
                buckets = estimate_summary(WINDOWS[key][1], scan_cap)
        except QueryTooBroad as exc:
            messages.warning(request, str(exc))
            rows, capped, buckets = [], False, []
        context = {
            **self.admin_site.each_context(request),
            "title": f"Usage by task: {WINDOWS[key][0].lower()}",
            "opts": self.opts,
            "rows": rows,
            "capped": capped,
            "buckets": buckets,
            "samples_min": estimates.SAMPLES_MIN,
            "scan_cap": f"{scan_cap:,}",
            "windows": [(k, label, k == key) for k, (label, _) in WINDOWS.items()],
        }
        return TemplateResponse(request, "dispatch_jobs/admin/usage/summary.html", context)
