"""Editing a queue's limits from the queues view: concurrency, per-org
concurrency and rate (docs/how-to/limits.md). Needs ``dispatch_jobs.limit_queue``;
changes go through ``store.set_queue_limits`` and hold from the next claim.

A limit set here wins over ``QUEUE_LIMITS`` in settings (the worker's start-up
sync leaves it alone) until "Use the settings' limits" hands the queue back.
"""

from __future__ import annotations

from typing import Any, cast

from django import forms
from django.contrib import messages
from django.contrib.admin.models import CHANGE, LogEntry
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse

from .. import limits, store
from ..exceptions import InvalidQueueLimits
from ..models import LimitsSource, QueueControl
from ..queue_limits import QueueLimits, period_text, settings_queue_limits, to_count, to_period
from ..store import reads

PERMISSION = "dispatch_jobs.limit_queue"


class QueueLimitsForm(forms.Form):
    """Every field optional: empty is unlimited. Each value is checked by the
    same rules as the QUEUE_LIMITS setting (``queue_limits``)."""

    max_running = forms.CharField(
        required=False,
        label="Max running",
        help_text="Most jobs of this queue running at once across every worker.",
    )
    max_running_per_org = forms.CharField(
        required=False,
        label="Max running per org",
        help_text="Most jobs of one scope org running at once (unscoped jobs count as one org).",
    )
    rate_limit = forms.CharField(
        required=False,
        label="Rate: starts",
        help_text="Most job starts in any period (a sliding window).",
    )
    rate_period = forms.CharField(
        required=False,
        label="Rate: period",
        help_text='The period: seconds, or "10s", "1m", "1h" (1s to 1 day).',
    )

    def _count(self, name: str) -> int | None:
        text = str(self.cleaned_data.get(name) or "").strip()
        if not text:
            return None
        if not text.isdigit():
            raise forms.ValidationError(
                f"Enter a whole number from 1 to {limits.QUEUE_LIMIT_MAX:,}, or leave it empty."
            )
        try:
            return to_count(int(text), str(self.fields[name].label or name))
        except InvalidQueueLimits as exc:
            raise forms.ValidationError(str(exc)) from None

    def clean_max_running(self) -> int | None:
        return self._count("max_running")

    def clean_max_running_per_org(self) -> int | None:
        return self._count("max_running_per_org")

    def clean_rate_limit(self) -> int | None:
        return self._count("rate_limit")

    def clean_rate_period(self) -> Any:
        text = str(self.cleaned_data.get("rate_period") or "").strip()
        if not text:
            return None
        try:
            return to_period(text, "The period")
        except InvalidQueueLimits as exc:
            raise forms.ValidationError(str(exc)) from None

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if self.errors:
            return data
        if (data.get("rate_limit") is None) != (data.get("rate_period") is None):
            raise forms.ValidationError(
                "A rate limit needs both its number of starts and its period."
            )
        return data

    def limits(self) -> QueueLimits:
        data = self.cleaned_data
        return QueueLimits(
            max_running=data["max_running"],
            max_running_per_org=data["max_running_per_org"],
            rate_limit=data["rate_limit"],
            rate_period=data["rate_period"],
        )


def initial(current: QueueLimits) -> dict[str, str]:
    def text(value: int | None) -> str:
        return "" if value is None else str(value)

    return {
        "max_running": text(current.max_running),
        "max_running_per_org": text(current.max_running_per_org),
        "rate_limit": text(current.rate_limit),
        "rate_period": period_text(current.rate_period) if current.rate_period else "",
    }


def limits_view(model_admin: Any, request: HttpRequest) -> HttpResponse:
    """GET: the form for ``?queue=``; POST: save it (or hand back to settings)."""
    if not request.user.has_perm(PERMISSION):
        raise PermissionDenied
    back = reverse("admin:dispatch_jobs_queuecontrol_changelist")
    data = request.POST if request.method == "POST" else request.GET
    name = str(data.get("queue", "")).strip()
    if not limits.is_queue_name(name):
        messages.error(request, f"Name a queue of {limits.QUEUE_NAME_RULE}.")
        return HttpResponseRedirect(back)
    current, source = store.queue_limits(name)
    if request.method == "POST" and "use_settings" in request.POST:
        try:
            declared = settings_queue_limits()
        except InvalidQueueLimits as exc:
            messages.error(request, f"QUEUE_LIMITS cannot be read: {exc}")
            return HttpResponseRedirect(back)
        applied = store.revert_queue_limits(name, declared)
        log_queue_change(request, name, f"Handed queue {name!r} limits back to the settings.")
        messages.success(
            request,
            f"Queue {name!r} follows QUEUE_LIMITS: {applied.describe() or 'no limits'}.",
        )
        return HttpResponseRedirect(back)
    if request.method == "POST":
        form = QueueLimitsForm(request.POST)
        if form.is_valid():
            chosen = form.limits()
            store.set_queue_limits(name, chosen)
            described = chosen.describe() or "no limits"
            log_queue_change(request, name, f"Set queue {name!r} limits: {described}.")
            messages.success(
                request, f"Queue {name!r}: {described}. Workers obey it from their next claim."
            )
            return HttpResponseRedirect(back)
    else:
        form = QueueLimitsForm(initial=initial(current))
    context = {
        **model_admin.admin_site.each_context(request),
        "title": f"Limits of queue {name}",
        "opts": QueueControl._meta,
        "queue": name,
        "form": form,
        "current": current.describe() or "no limits",
        "source": LimitsSource(source).label if source else "",
        "from_settings": source == LimitsSource.SETTINGS,
    }
    return TemplateResponse(request, "dispatch_jobs/admin/queue_limits.html", context)


def log_queue_change(request: HttpRequest, name: str, message: str) -> None:
    """The admin log's entry for a change to queue ``name`` (its control row's)."""
    control = reads.queue_controls().filter(name=name).first()
    if control is not None:
        LogEntry.objects.log_actions(
            user_id=cast(int, request.user.pk),
            queryset=[control],
            action_flag=CHANGE,
            change_message=message,
        )
