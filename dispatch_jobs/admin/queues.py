"""The queues view: per queue, how much is waiting and how late, its limits,
pause/resume and the limits' form (``admin.queue_limits``).

Registered on ``QueueControl`` (the small table of paused queues), so it appears
in the admin index as "Queue controls". A paused queue is skipped by every claim
(``store.claim_jobs``); jobs can still be enqueued into it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, cast

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import (
    BooleanField,
    CharField,
    DateTimeField,
    F,
    IntegerField,
    Max,
    Q,
    TextField,
    Value,
)
from django.db.models.functions import Cast, Now
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import path, reverse
from django.views.decorators.http import require_POST

from .. import database, limits, store
from ..conf import declared_queues, settings
from ..exceptions import QueryTooBroad
from ..models import LIMITED, READY_STATES, JobState, QueueControl
from ..models.stored_json import read_stored
from ..queue_limits import of_control
from ..store import reads
from .paging import bounded_count
from .params import guarded
from .queue_limits import PERMISSION as LIMIT_PERMISSION
from .queue_limits import limits_view, log_queue_change
from .readonly import OverviewAdmin
from .safety import bounded_queries


@dataclass(frozen=True)
class Fleet:
    """What the admin knows of queues and workers without reading the jobs table."""

    queues: list[str]
    worker_ids: list[str]
    paused: frozenset[str] = frozenset()
    # Each live worker row's (concurrency, last_seen_at), for the dashboard.
    workers: tuple[tuple[int, datetime], ...] = ()
    # Task names that finished jobs in the rollup's retention (when asked for).
    tasks: list[str] = field(default_factory=list)


def fleet(request: HttpRequest | None = None, *, tasks: bool = True) -> Fleet:
    """Known queues (``default``, each dispatch_jobs backend's QUEUES in TASKS,
    queues live workers serve, queues with a control row), paused queues,
    workers and, with ``tasks``, the task names in the rollup (``TaskMinute``):
    one query over the small tables, done once per request (the filters share
    it), so the job list stays at two reads of the jobs table plus this one."""
    cached = getattr(request, "_dispatch_jobs_fleet", None)
    if cached is not None:
        return cast(Fleet, cached)
    names = declared_queues()
    worker_ids: list[str] = []
    paused: set[str] = set()
    workers: list[tuple[int, datetime]] = []
    task_names: list[str] = []
    for key, kind, queues, is_paused, concurrency, last_seen in _fleet_rows(tasks):
        if kind == "queue":
            names.add(key)
            if is_paused:
                paused.add(key)
        elif kind == "task":
            task_names.append(key)
        else:
            worker_ids.append(key)
            workers.append((concurrency, last_seen))
            # A worker's own row, but stored: whatever it holds must not fail the page.
            listed = read_stored(queues) if queues else []
            if isinstance(listed, list):
                names.update(q for q in listed if isinstance(q, str))
    result = Fleet(
        sorted(names), sorted(worker_ids), frozenset(paused), tuple(workers), sorted(task_names)
    )
    if request is not None:
        request._dispatch_jobs_fleet = result  # type: ignore[attr-defined]
    return result


def _fleet_rows(tasks: bool) -> list[tuple[str, str, str, bool, int, datetime]]:
    """(name, "queue", "", paused, 0, None) per queue control row, (id,
    "worker", queues as JSON text, False, concurrency, last seen) per worker row
    and, with ``tasks``, (name, "task", "", False, 0, None) per task name in the
    rollup, in one UNION ALL. Each side selects one model column then the same
    five annotations, so the columns line up."""
    text = CharField()
    controls = (
        reads.queue_controls()
        .annotate(
            kind=Value("queue", output_field=text),
            extra=Value("", output_field=text),
            is_paused=F("paused"),
            slots=Value(0, output_field=IntegerField()),
            seen=Value(None, output_field=DateTimeField()),
        )
        .values_list("name", "kind", "extra", "is_paused", "slots", "seen")
        .order_by()  # a compound statement takes no ORDER BY in its parts
    )
    workers = (
        reads.workers()
        .annotate(
            kind=Value("worker", output_field=text),
            extra=Cast("queues", TextField()),
            is_paused=Value(False, output_field=BooleanField()),
            slots=F("concurrency"),
            seen=F("last_seen_at"),
        )
        .values_list("id", "kind", "extra", "is_paused", "slots", "seen")
        .order_by()
    )
    if not tasks:
        return list(controls.union(workers, all=True))
    names = (  # one row per name: GROUP BY (the aggregate itself is not selected)
        reads.task_minutes()
        .values("name")
        .annotate(last=Max("minute"))
        .annotate(
            kind=Value("task", output_field=text),
            extra=Value("", output_field=text),
            is_paused=Value(False, output_field=BooleanField()),
            slots=Value(0, output_field=IntegerField()),
            seen=Value(None, output_field=DateTimeField()),
        )
        .values_list("name", "kind", "extra", "is_paused", "slots", "seen")
        .order_by()
    )
    return list(controls.union(workers, names, all=True))


def known_queues() -> list[str]:
    return fleet(tasks=False).queues


@dataclass
class QueueRow:
    name: str
    paused: bool
    ready: int | None
    scheduled: int | None
    running: int | None
    failed: int | None
    oldest_ready_age: timedelta | None
    limits: str = ""  # "5 running, 2 per org, 100 per 1m"; "" when unlimited
    limits_source: str = ""

    @property
    def oldest_ready(self) -> str:
        """The age to whole seconds ("0:03:07"), or "" when nothing is ready."""
        if self.oldest_ready_age is None:
            return ""
        return str(timedelta(seconds=int(self.oldest_ready_age.total_seconds())))


def queue_rows() -> list[QueueRow]:
    """One row per known queue. Counts are bounded probes (None: over the
    threshold), each served by an index on (state, ...) or (queue, ...)."""
    known = fleet(tasks=False)
    paused = known.paused
    threshold = settings.admin_count_threshold
    now = database.database_now()
    jobs = reads.jobs()
    limited = {control.name: control for control in reads.queue_controls().filter(LIMITED)}
    rows = []
    for name in known.queues:
        control = limited.get(name)
        in_queue = jobs.filter(queue=name)
        ready = in_queue.filter(state__in=READY_STATES, run_at__lte=Now())
        oldest = ready.order_by("run_at").values_list("run_at", flat=True).first()
        rows.append(
            QueueRow(
                name=name,
                paused=name in paused,
                ready=bounded_count(ready, threshold),
                scheduled=bounded_count(
                    in_queue.filter(Q(state__in=READY_STATES) & Q(run_at__gt=Now())), threshold
                ),
                running=bounded_count(in_queue.filter(state=JobState.RUNNING), threshold),
                failed=bounded_count(in_queue.filter(state=JobState.FAILED), threshold),
                oldest_ready_age=max(now - oldest, timedelta(0)) if oldest else None,
                limits=of_control(control).describe() if control else "",
                limits_source=control.get_limits_source_display() if control else "",
            )
        )
    return rows


@admin.register(QueueControl)
class QueueControlAdmin(OverviewAdmin):
    """Read-only overview with pause/resume buttons (``pause_queue`` permission)
    and a link to each queue's limits (``limit_queue`` permission)."""

    overview_title = "Queues"
    overview_template = "dispatch_jobs/admin/queues.html"

    def has_pause_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("dispatch_jobs.pause_queue")

    def has_limit_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(LIMIT_PERMISSION)

    def get_urls(self) -> list[Any]:
        wrap = self.admin_site.admin_view
        return [
            path("pause/", wrap(guarded(self.pause_view)), name="dispatch_jobs_queue_pause"),
            path("resume/", wrap(guarded(self.resume_view)), name="dispatch_jobs_queue_resume"),
            path("limits/", wrap(guarded(self.limits_view)), name="dispatch_jobs_queue_limits"),
            *super().get_urls(),
        ]

    def overview_context(self, request: HttpRequest) -> dict[str, Any]:
        threshold = settings.admin_count_threshold
        try:
            with bounded_queries():
                rows = queue_rows()
        except QueryTooBroad as exc:
            messages.warning(request, str(exc))
            rows = []
        return {
            "rows": rows,
            "threshold": f"{threshold:,}+",
            "can_pause": self.has_pause_permission(request),
            "can_limit": self.has_limit_permission(request),
        }

    def limits_view(self, request: HttpRequest) -> HttpResponse:
        return limits_view(self, request)

    def pause_view(self, request: HttpRequest) -> HttpResponse:
        return self._switch(request, paused=True)

    def resume_view(self, request: HttpRequest) -> HttpResponse:
        return self._switch(request, paused=False)

    def _switch(self, request: HttpRequest, *, paused: bool) -> HttpResponse:
        return require_POST(self._switch_post)(request, paused=paused)

    def _switch_post(self, request: HttpRequest, *, paused: bool) -> HttpResponse:
        if not self.has_pause_permission(request):
            raise PermissionDenied
        name = request.POST.get("queue", "").strip()
        if not limits.is_queue_name(name):
            messages.error(request, f"Name a queue of {limits.QUEUE_NAME_RULE}.")
        else:
            (store.pause_queue if paused else store.resume_queue)(name)
            verb = "Paused" if paused else "Resumed"
            log_queue_change(request, name, f"{verb} queue {name!r}.")
            messages.success(
                request,
                f"{verb} queue {name!r}: workers "
                + ("skip it until it is resumed." if paused else "claim from it again."),
            )
        return HttpResponseRedirect(reverse("admin:dispatch_jobs_queuecontrol_changelist"))
