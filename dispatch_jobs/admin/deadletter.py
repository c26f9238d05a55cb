"""The dead-letter view: failed jobs not yet retried, grouped by task and error
class, with counts, first and last seen, and a capped "retry this group".

Grouping reads the newest ``ADMIN_SCAN_CAP`` failed jobs through the (state, id)
index and groups them in Python: a GROUP BY over a large dead-letter table would
scan all of it, and the error class is parsed from the error line anyway. When
the cap is reached the page says the counts cover only the newest rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from django.contrib import messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse

from ..conf import settings
from ..exceptions import QueryTooBroad
from ..models import Job, JobState
from ..store import reads
from .actions import ACTIONS
from .safety import bounded_queries

if TYPE_CHECKING:
    from .jobs import JobAdmin

_CLASS_CHARS = 120


def error_class(last_error: str) -> str:
    """The error class from a worker's error line ("ValueError: bad input")."""
    head = (last_error or "").split(":", 1)[0].strip()
    return head[:_CLASS_CHARS] or "(no error recorded)"


@dataclass
class DeadLetterGroup:
    task: str
    error_class: str
    count: int = 0
    first_seen: datetime | None = None
    last_seen: datetime | None = None
    sample_error: str = ""
    job_ids: list[int] = field(default_factory=list)

    def add(self, job_id: int, last_error: str, seen: datetime | None) -> None:
        self.count += 1
        self.job_ids.append(job_id)
        if not self.sample_error:
            self.sample_error = last_error[:500]
        if seen is not None:
            self.first_seen = min(self.first_seen or seen, seen)
            self.last_seen = max(self.last_seen or seen, seen)


def _dead_letters() -> QuerySet[Job]:
    """Failed jobs that no replay has picked up yet."""
    return reads.jobs().filter(state=JobState.FAILED, replayed_by__isnull=True)


def dead_letter_groups(scan_cap: int) -> tuple[list[DeadLetterGroup], bool]:
    """Groups over the newest ``scan_cap`` dead letters, biggest first, and
    whether the cap cut the scan short."""
    rows = list(
        _dead_letters()
        .order_by("-id")
        .values_list("id", "name", "last_error", "completed_at")[: scan_cap + 1]
    )
    capped = len(rows) > scan_cap
    groups: dict[tuple[str, str], DeadLetterGroup] = {}
    for job_id, name, last_error, seen in rows[:scan_cap]:
        key = (name, error_class(last_error))
        groups.setdefault(key, DeadLetterGroup(*key)).add(job_id, last_error, seen)
    ordered = sorted(groups.values(), key=lambda g: (-g.count, g.task, g.error_class))
    return ordered, capped


def render(model_admin: JobAdmin, request: HttpRequest) -> HttpResponse:
    scan_cap = settings.admin_scan_cap
    try:
        with bounded_queries():
            groups, capped = dead_letter_groups(scan_cap)
    except QueryTooBroad as exc:
        messages.warning(request, str(exc))
        groups, capped = [], False
    context = {
        **model_admin.admin_site.each_context(request),
        "title": "Dead letter: failed jobs by task and error",
        "opts": model_admin.opts,
        "groups": groups,
        "capped": capped,
        "scan_cap": f"{scan_cap:,}",
        "bulk_cap": f"{settings.admin_bulk_cap:,}",
        "can_retry": model_admin.has_retry_permission(request),
    }
    return TemplateResponse(request, "dispatch_jobs/admin/job/deadletter.html", context)


def confirm_group_retry(model_admin: JobAdmin, request: HttpRequest) -> HttpResponse:
    """The confirmation page for retrying one group: its newest jobs, at most
    ``ADMIN_BULK_CAP`` of them (the rest stay for the next round)."""
    task = request.GET.get("task", "")
    wanted = request.GET.get("error", "")
    cap = settings.admin_bulk_cap
    back = reverse("admin:dispatch_jobs_job_deadletter")
    try:
        with bounded_queries():
            rows = (
                _dead_letters()
                .filter(name=task)
                .order_by("-id")
                .values_list("id", "last_error")[: settings.admin_scan_cap]
            )
            ids = [job_id for job_id, last_error in rows if error_class(last_error) == wanted]
    except QueryTooBroad as exc:
        messages.warning(request, str(exc))
        return HttpResponseRedirect(back)
    if not ids:
        messages.warning(request, "That group has no failed jobs left to retry.")
        return HttpResponseRedirect(back)
    if len(ids) > cap:
        messages.info(
            request,
            f"This group has {len(ids):,} jobs; a retry takes the newest {cap:,}. "
            "Retry the group again for the rest.",
        )
    return model_admin.confirm_action(request, ACTIONS["retry"], ids[:cap], back)
