"""The job admin: a keyset-paged, index-served list, a read-only detail page, and
operator actions that go through the store.

Jobs are never added or edited in a form: enqueue makes them, the worker and the
store's operator actions change them.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.views.main import SEARCH_VAR
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.db.models.functions import Substr
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import path, reverse
from django.utils.dateparse import parse_datetime
from django.utils.html import format_html
from django.utils.http import urlencode

from .. import database, store
from ..attempts import attempt_list
from ..conf import settings
from ..models import Job, JobState
from ..readback import nearest_values
from ..store import reads
from . import deadletter, display, filters, params, search, values
from .actions import CHANGELIST_ACTIONS, JobActionsMixin, parse_ids
from .paging import KeysetModelAdmin, KeysetPaginator, SortKey
from .params import guarded

# The whitelist: each order is (key, id) in one direction, served by the index named.
JOB_SORT_KEYS = (
    SortKey("-id", "Newest first", None, True, "primary key"),
    SortKey("id", "Oldest first", None, False, "primary key"),
    SortKey("-priority", "Highest priority first", "priority", True, "dj_job_priority_id"),
    SortKey(
        "-completed_at",
        "Recently finished first",
        "completed_at",
        True,
        "dj_job_completed_id",
        is_time=True,
    ),
)
# The most of last_error the list reads (its first line, cut for the column).
ERROR_HEAD_CHARS = 200
# Columns the list never shows; they can be large, so they are not fetched for it.
_LIST_DEFERRED = ("payload", "return_value", "attempts", "last_error", "resources")


@admin.register(Job)
class JobAdmin(JobActionsMixin, KeysetModelAdmin):
    # Fits 1280 px: priority, run-at and worker are on each job's page.
    list_display = (
        "id",
        "task_name",
        "queue",
        "state_badge",
        "attempts_made",
        "error_summary",
        "enqueued",
        "finished",
        "run_time",
    )
    list_display_links = ("id", "task_name")
    empty_value_display = display.EMPTY
    list_filter = (
        filters.StateFilter,
        filters.QueueFilter,
        filters.TaskFilter,
        filters.PriorityFilter,
        filters.ScopeAppFilter,
        filters.ScopeOrgFilter,
        filters.WorkerFilter,
        filters.EnqueuedFilter,
        filters.FinishedFilter,
        filters.SortFilter,
    )
    search_fields = ("name",)
    search_help_text = (
        "A task name or any part of it; #123 opens job 123; JSON such as "
        '{"user_id": 7} (keyword arguments) or [7] (positional) finds jobs by '
        "argument content (PostgreSQL only)."
    )
    actions = CHANGELIST_ACTIONS
    sort_keys = JOB_SORT_KEYS
    list_deferred = _LIST_DEFERRED
    change_list_template = "dispatch_jobs/admin/job/change_list.html"
    change_form_template = "dispatch_jobs/admin/job/detail.html"

    @admin.display(description="task")
    def task_name(self, job: Job) -> str:
        return format_html('<span title="{}">{}</span>', job.name, job.name)

    @admin.display(description="state")
    def state_badge(self, job: Job) -> str:
        return format_html(
            '<span class="dj-badge dj-state-{}">{}</span>', job.state, job.get_state_display()
        )

    @admin.display(description="attempts")
    def attempts_made(self, job: Job) -> str:
        """Made / allowed: a job that failed its first try reads "1/4"."""
        made = display.attempts_made(
            job.state, job.retry_count, stopped_running=job.cancel_requested_at is not None
        )
        return f"{made}/{job.max_retries + 1}"

    @admin.display(description="error")
    def error_summary(self, job: Job) -> str:
        if job.state not in (JobState.FAILED, JobState.RETRYING):
            return ""
        head = getattr(job, "error_head", None)
        if head is None:  # not annotated (a list built elsewhere)
            head = job.last_error
        line = display.error_summary(head)
        return format_html('<span title="{}">{}</span>', line, line) if line else ""

    @admin.display(description="enqueued")
    def enqueued(self, job: Job) -> str:
        return _moment_cell(job.created_at)

    @admin.display(description="finished")
    def finished(self, job: Job) -> str:
        return _moment_cell(job.completed_at)

    @admin.display(description="run time")
    def run_time(self, job: Job) -> str:
        if job.completed_at is None or job.started_at is None:
            return ""
        return display.duration(job.completed_at - job.started_at)

    # --- Permissions: read-only rows; each action has its own permission.
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        if obj is not None and obj.state == JobState.RUNNING:
            return False  # a worker holds it
        return super().has_delete_permission(request, obj)

    def delete_model(self, request: HttpRequest, obj: Job) -> None:
        store.delete_jobs([obj.pk])

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Job]) -> None:
        store.delete_jobs(queryset.values_list("id", flat=True))

    # --- The list.
    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> HttpResponse:
        term = request.GET.get(SEARCH_VAR, "").strip()
        number = params.job_id(term) if _names_an_id(term) else None
        if number is not None:
            if self.get_queryset(request).filter(pk=number).exists():
                # "#7" opens job 7 rather than listing one row.
                change = reverse("admin:dispatch_jobs_job_change", args=[number])
                return HttpResponseRedirect(change)
            messages.warning(request, f"There is no job #{number}.")
        if request.method == "POST" and not self._selection_is_ids(request):
            return HttpResponseRedirect(request.get_full_path())
        context = {
            "bulk_cap": f"{settings.admin_bulk_cap:,}",
            # The list needs the width: without the admin's app sidebar every
            # column fits at 1280 px (the dashboard links replace it here).
            "is_nav_sidebar_enabled": False,
            **(extra_context or {}),
        }
        return super().changelist_view(request, context)

    def _selection_is_ids(self, request: HttpRequest) -> bool:
        """Django's action form posts the ticked rows' ids; anything else in it
        (a forged or broken form) is refused before it reaches a query."""
        try:
            parse_ids(request.POST.getlist(helpers.ACTION_CHECKBOX_NAME))
        except ValueError as exc:
            messages.error(request, f"Nothing was changed: {exc}.")
            return False
        return True

    def get_queryset(self, request: HttpRequest) -> QuerySet[Job]:
        return reads.jobs()

    def keyset_paginator(
        self, request: HttpRequest, queryset: QuerySet[Job], per_page: int
    ) -> KeysetPaginator:
        # The error column needs the head of last_error only: the database cuts
        # it, so a page never carries whole tracebacks.
        head = Substr("last_error", 1, ERROR_HEAD_CHARS)
        return super().keyset_paginator(request, queryset.annotate(error_head=head), per_page)

    def lookup_allowed(self, lookup: str, value: str, request: Any = None) -> bool:
        # Only the declared filters' own parameters: no ad-hoc ?payload__icontains=
        # that no index serves.
        return lookup in {spec.parameter_name for spec in self.list_filter}

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Job], search_term: str
    ) -> tuple[QuerySet[Job], bool]:
        term = search_term.strip()
        if not term:
            return queryset, False
        if _names_an_id(term):
            number = params.job_id(term)
            if number is None:
                messages.warning(
                    request, f"There is no job {term[:40]}: ids are 1 to {params.MAX_ID:,}."
                )
                return queryset.none(), False
            return queryset.filter(id=number), False
        if term[0] in "{[":
            return self._argument_search(request, queryset, term), False
        # A substring of the task name: no index serves it (see docs/admin.md,
        # "Search"); the page stays keyset-paged and under the statement timeout.
        return queryset.filter(name__icontains=term), False

    def _argument_search(
        self, request: HttpRequest, queryset: QuerySet[Job], term: str
    ) -> QuerySet[Job]:
        if database.vendor() != "postgresql":
            messages.warning(
                request,
                "Searching by argument content needs PostgreSQL (an indexed JSON "
                "containment query); this database has no such index.",
            )
            return queryset.none()
        try:
            wanted = search.json_value(term)
        except ValueError as exc:
            messages.error(request, f"That search is not valid JSON ({exc}).")
            return queryset.none()
        if isinstance(wanted, list):
            wanted = {"args": wanted}
        elif not set(wanted) <= {"args", "kwargs"}:
            wanted = {"kwargs": wanted}
        return queryset.filter(payload__contains=wanted)

    # --- Extra pages: actions, full values, dead letter.
    def get_urls(self) -> list[Any]:
        wrap = self.admin_site.admin_view
        return [
            path(
                "action/<str:name>/",
                wrap(guarded(self.action_view)),
                name="dispatch_jobs_job_action",
            ),
            path(
                "<int:object_id>/value/<str:field>/",
                wrap(guarded(self.value_view)),
                name="dispatch_jobs_job_value",
            ),
            path(
                "dead-letter/",
                wrap(guarded(self.deadletter_view)),
                name="dispatch_jobs_job_deadletter",
            ),
            path(
                "dead-letter/retry/",
                wrap(guarded(self.deadletter_retry_view)),
                name="dispatch_jobs_job_deadletter_retry",
            ),
            *super().get_urls(),
        ]

    def value_view(self, request: HttpRequest, object_id: int, field: str) -> HttpResponse:
        """The whole (redacted) value as plain text: never rendered as HTML."""
        job = self.get_object(request, str(object_id))
        if job is None or field not in values.FIELDS:
            raise Http404("No such job or value.")
        if not self.has_view_permission(request, job):
            raise PermissionDenied
        response = HttpResponse(
            values.full_text(job, field), content_type="text/plain; charset=utf-8"
        )
        response["X-Content-Type-Options"] = "nosniff"
        return response

    def deadletter_view(self, request: HttpRequest) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        return deadletter.render(self, request)

    def deadletter_retry_view(self, request: HttpRequest) -> HttpResponse:
        if not self.has_retry_permission(request):
            raise PermissionDenied
        return deadletter.confirm_group_retry(self, request)

    # --- The detail page.
    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        with nearest_values():  # the detail's own reads too (``readback``)
            job = self.get_object(request, object_id)
            context = dict(extra_context or {})
            if job is not None:
                context.update(self.detail_context(request, job))
            return super().change_view(request, object_id, form_url, context)

    def detail_context(self, request: HttpRequest, job: Job) -> dict[str, Any]:
        now = database.database_now()
        lease_left = None
        if job.state == JobState.RUNNING and job.lease_expires_at is not None:
            lease_left = max(job.lease_expires_at - now, timedelta(0))
        replayed_by = reads.jobs().filter(replay_of_id=job.pk).first()
        here = reverse("admin:dispatch_jobs_job_change", args=[job.pk])
        return {
            "job": job,
            "attempts_made": display.attempts_made(
                job.state, job.retry_count, stopped_running=job.cancel_requested_at is not None
            ),
            "attempts_allowed": job.max_retries + 1,
            "arguments": values.shown(job, "payload"),
            "return_value": (
                values.shown(job, "return_value") if job.return_value is not None else None
            ),
            # A stored log that is not a list shows as one entry saying what it held.
            "attempts": [_attempt(a) for a in attempt_list(job.attempts) if isinstance(a, dict)],
            "usages": list(reads.usage().filter(job_id=job.pk).order_by("attempt", "id")[:100]),
            "lease_left": lease_left,
            "db_now": now,
            "timeline": _timeline(job),
            "replayed_by": replayed_by,
            "job_actions": [
                {"action": a, "url": _action_link(a.name, job.pk, here)}
                for a in self.allowed_actions(request, job)
                if not (a.name == "retry" and replayed_by is not None)  # once only
            ],
        }


def _names_an_id(term: str) -> bool:
    """ "7" and "#7" (and "#-1", "#999…9") are job ids to look up, not names."""
    return term.startswith("#") or (term.isascii() and term.isdigit())


def _moment_cell(value: datetime | None) -> str:
    """The console's one date format, free to break between day and time only."""
    text = display.moment(value)
    if value is None:
        return text
    day, clock = text.split(" ", 1)
    return format_html(
        '<span class="dj-day">{}</span> <span class="dj-clock">{}</span>', day, clock
    )


def _action_link(name: str, job_id: int, next_url: str) -> str:
    query = urlencode({"ids": str(job_id), "next": next_url})
    return f"{reverse('admin:dispatch_jobs_job_action', args=[name])}?{query}"


def _attempt(raw: dict[str, Any]) -> dict[str, Any]:
    """An attempt record with only the keys the page shows (all as plain text)."""
    keys = ("attempt", "status", "worker_id", "exception_class", "message", "traceback")
    shown = {key: raw.get(key, "") for key in keys}
    shown["started_at"] = raw.get("started_at", "")
    shown["finished_at"] = raw.get("finished_at", raw.get("at", ""))
    return shown


def _timeline(job: Job) -> list[tuple[str, Any]]:
    events: list[tuple[str, Any]] = [
        ("Enqueued", job.created_at),
        ("Due (run at)", job.run_at),
        ("Last started", job.started_at),
        ("Last heartbeat", job.heartbeat_at),
        ("Finished", job.completed_at),
        ("Last updated", job.updated_at),
    ]
    for attempt in attempt_list(job.attempts):
        at = attempt.get("finished_at", attempt.get("at")) if isinstance(attempt, dict) else None
        when = parse_datetime(at) if isinstance(at, str) else None
        if when is not None:
            if when.tzinfo is None:
                when = when.replace(tzinfo=UTC)
            label = f"Attempt {attempt.get('attempt', '?')} {attempt.get('status', '')}"
            events.append((label.strip(), when))
    return sorted(((label, at) for label, at in events if at), key=lambda event: event[1])
