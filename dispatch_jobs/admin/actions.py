"""Operator actions on jobs: retry (replay), cancel, run now, delete.

Each action has its own permission and a state guard (enforced by the store,
which reports every skipped job with its reason). From the change list an action
leads to a confirmation page; the confirmation posts to the action's own URL
(``job/action/<name>/``), which answers 403 to anyone without the permission.
"Apply to all matching" acts on at most ``ADMIN_BULK_CAP`` jobs; a larger set is
refused with a message, never silently cut. Every job changed is recorded in the
admin log. Nothing here writes a row itself: the store does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, cast

from django.contrib import messages
from django.contrib.admin import helpers
from django.contrib.admin.models import CHANGE, DELETION, LogEntry
from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme

from .. import store
from ..conf import settings
from ..models import READY_STATES, Job, JobState
from ..store import REPLAYABLE_STATES, OperationReport, reads
from .params import MAX_ID, job_id

# How many of the selected jobs the confirmation page lists by name.
CONFIRM_LISTED = 100


@dataclass(frozen=True)
class JobAction:
    name: str
    label: str
    verb: str
    permission: str  # ModelAdmin.has_<permission>_permission decides
    eligible: tuple[str, ...]
    run: Callable[[list[int], str], OperationReport]  # (ids, who acts)
    log_flag: int
    destructive: bool = False

    def log_message(self, report: OperationReport, job_id: int) -> str:
        if job_id in report.created:
            return f"Retried as job #{report.created[job_id]}."
        if job_id in report.requested:
            return "Cancel requested while running, from the admin."
        return f"{self.verb.capitalize()} from the admin."


ACTIONS: dict[str, JobAction] = {
    action.name: action
    for action in (
        JobAction(
            "retry",
            "Retry (replay as a new job)",
            "retried",
            "retry",
            tuple(REPLAYABLE_STATES),
            lambda ids, by: store.replay_jobs(ids),
            CHANGE,
        ),
        JobAction(
            "cancel",
            "Cancel",
            "cancelled",
            "cancel",
            (*READY_STATES, JobState.RUNNING),  # a running job is asked to stop
            store.cancel_jobs,
            CHANGE,
            destructive=True,
        ),
        JobAction(
            "run_now",
            "Run now",
            "moved to run now",
            "run_now",
            tuple(READY_STATES),
            lambda ids, by: store.run_jobs_now(ids),
            CHANGE,
        ),
        JobAction(
            "delete",
            "Delete",
            "deleted",
            "delete",
            tuple(s for s in JobState.values if s != JobState.RUNNING),
            lambda ids, by: store.delete_jobs(ids),
            DELETION,
            destructive=True,
        ),
    )
}


def parse_ids(raw: str | Iterable[str]) -> list[int]:
    """Job ids from "1,2,3" or a list of strings; anything else is refused."""
    parts = raw.split(",") if isinstance(raw, str) else list(raw)
    ids = set()
    for part in (str(p).strip() for p in parts):
        if not part:
            continue
        number = job_id(part)
        if number is None:
            raise ValueError(f"job ids must be whole numbers from 1 to {MAX_ID:,}")
        ids.add(number)
    return sorted(ids)


def _changelist_action(action: JobAction) -> Callable[..., Any]:
    """The change-list entry point of ``action``: leads to its confirmation page."""

    def run(modeladmin: Any, request: HttpRequest, queryset: QuerySet[Job]) -> Any:
        cap = settings.admin_bulk_cap
        ids = list(queryset.order_by("-id").values_list("id", flat=True)[: cap + 1])
        if len(ids) > cap:
            messages.error(
                request,
                f"More than {cap:,} jobs match; '{action.label}' acts on at most {cap:,} at "
                "once. Narrow the filter and try again. Nothing was changed.",
            )
            return None
        return modeladmin.confirm_action(request, action, ids)

    # "delete_selected" replaces Django's own delete action, which would call
    # Model.delete() behind the store's back.
    run.__name__ = "delete_selected" if action.name == "delete" else f"{action.name}_jobs"
    run.short_description = f"{action.label} selected jobs"  # type: ignore[attr-defined]
    run.allowed_permissions = (action.permission,)  # type: ignore[attr-defined]
    return run


CHANGELIST_ACTIONS = [_changelist_action(action) for action in ACTIONS.values()]


class JobActionsMixin:
    """The ModelAdmin half of the actions: permissions, confirmation, execution."""

    admin_site: Any
    opts: Any

    # --- One permission per action (Django's custom model permissions).
    def has_retry_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("dispatch_jobs.retry_job")

    def has_cancel_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("dispatch_jobs.cancel_job")

    def has_run_now_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("dispatch_jobs.run_job_now")

    def allowed_actions(self, request: HttpRequest, job: Job | None = None) -> list[JobAction]:
        """The actions this user may take (on ``job``, those its state allows)."""
        allowed = []
        for action in ACTIONS.values():
            if not getattr(self, f"has_{action.permission}_permission")(request):
                continue
            if job is None or job.state in action.eligible:
                allowed.append(action)
        return allowed

    def confirm_action(
        self, request: HttpRequest, action: JobAction, ids: list[int], next_url: str = ""
    ) -> HttpResponse:
        """The confirmation page: what will happen and to which jobs."""
        jobs = list(
            reads.jobs().filter(id__in=ids).only("id", "name", "queue", "state").order_by("-id")
        )
        eligible = sum(1 for job in jobs if job.state in action.eligible)
        changelist = reverse("admin:dispatch_jobs_job_changelist")
        context = {
            **self.admin_site.each_context(request),
            "title": f"{action.label}: are you sure?",
            "opts": self.opts,
            "action": action,
            "ids": ",".join(str(i) for i in ids),
            "listed": jobs[:CONFIRM_LISTED],
            "unlisted": max(len(jobs) - CONFIRM_LISTED, 0),
            "selected": len(ids),
            "eligible": eligible,
            "ineligible": len(ids) - eligible,
            "next_url": next_url or request.get_full_path() or changelist,
            "post_url": reverse("admin:dispatch_jobs_job_action", args=[action.name]),
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        }
        return TemplateResponse(request, "dispatch_jobs/admin/job/confirm_action.html", context)

    def action_view(self, request: HttpRequest, name: str) -> HttpResponse:
        """``job/action/<name>/``: GET confirms, POST (with ``confirm=yes``) acts."""
        action = ACTIONS.get(name)
        if action is None:
            raise Http404(f"No job action {name!r}.")
        if not getattr(self, f"has_{action.permission}_permission")(request):
            raise PermissionDenied
        data = request.POST if request.method == "POST" else request.GET
        next_url = self._safe_next(request, data.get("next", ""))
        try:
            ids = parse_ids(data.get("ids", ""))
        except ValueError as exc:
            messages.error(request, f"Nothing was changed: {exc}.")
            return HttpResponseRedirect(next_url)
        cap = settings.admin_bulk_cap
        if not ids:
            messages.warning(request, "No jobs were selected; nothing was changed.")
            return HttpResponseRedirect(next_url)
        if len(ids) > cap:
            messages.error(
                request, f"{len(ids):,} jobs is over the cap of {cap:,}; nothing was changed."
            )
            return HttpResponseRedirect(next_url)
        if request.method != "POST" or data.get("confirm") != "yes":
            return self.confirm_action(request, action, ids, next_url)
        return self.run_action(request, action, ids, next_url)

    def run_action(
        self, request: HttpRequest, action: JobAction, ids: list[int], next_url: str
    ) -> HttpResponse:
        # Captured before the action: a deleted job can still be named in the log.
        before = {job.id: job for job in reads.jobs().filter(id__in=ids)}
        report = action.run(ids, request.user.get_username())
        _log(request, action, report, before)
        acted = report.done or report.requested
        level = messages.SUCCESS if acted and not report.skipped else messages.WARNING
        messages.add_message(request, level, _describe(action, report))
        return HttpResponseRedirect(next_url)

    def _safe_next(self, request: HttpRequest, candidate: str) -> str:
        if candidate and url_has_allowed_host_and_scheme(
            candidate, allowed_hosts={request.get_host()}, require_https=request.is_secure()
        ):
            return candidate
        return reverse("admin:dispatch_jobs_job_changelist")


def _log(
    request: HttpRequest, action: JobAction, report: OperationReport, jobs: dict[int, Job]
) -> None:
    """One admin-log entry per job changed, written in one INSERT."""
    content_type = ContentType.objects.get_for_model(Job)
    LogEntry.objects.bulk_create(
        [
            LogEntry(
                user_id=cast(int, request.user.pk),
                content_type_id=content_type.pk,
                object_id=str(job_id),
                object_repr=str(jobs[job_id])[:200],
                action_flag=action.log_flag,
                change_message=action.log_message(report, job_id),
            )
            for job_id in [*report.done, *report.requested]
            if job_id in jobs
        ]
    )


def _describe(action: JobAction, report: OperationReport) -> str:
    text = f"{action.label}: {len(report.done)} job(s) {action.verb}"
    if report.created:
        shown = ", ".join(f"#{old} → #{new}" for old, new in list(report.created.items())[:5])
        text += f" ({shown}{', …' if len(report.created) > 5 else ''})"
    if report.requested:
        text += (
            f"; {len(report.requested)} running job(s) asked to stop: their workers stop "
            "them at the next heartbeat and mark them cancelled"
        )
    if report.skipped:
        reasons = "; ".join(f"#{i} {why}" for i, why in list(report.skipped.items())[:5])
        more = f"; and {len(report.skipped) - 5} more" if len(report.skipped) > 5 else ""
        text += f"; {len(report.skipped)} skipped: {reasons}{more}"
    return text + "."
