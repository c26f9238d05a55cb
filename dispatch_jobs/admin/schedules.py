"""Periodic schedules: the list (next fire, last run and its outcome), the change
form, and the enable / disable / run-now actions, each behind its own permission
(``toggle_schedule``, ``run_schedule``; editing needs ``change_schedule``).

Every write goes through the store (``store.save_schedule``,
``set_schedules_enabled``, ``run_schedule_now``, ``delete_schedule``). A
schedule declared in code shows its definition read-only (the next worker start
would overwrite an edit); its enabled flag stays the operator's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import OuterRef, QuerySet, Subquery
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from .. import names, scheduler, store
from ..exceptions import DispatchJobsError, InvalidSchedule
from ..models import Schedule, ScheduleSource
from ..schedules import DEFINITION
from ..store import reads
from ..ticks import check_cron, check_interval, check_zone
from .display import EMPTY, duration, moment
from .filters import ChoiceFilter
from .params import CleanParamsMixin


class ScheduleForm(forms.ModelForm):
    """The change form: the cron expression, zone and task are checked here, each
    error on its own field."""

    class Meta:
        model = Schedule
        fields = ("name", *DEFINITION, "enabled")

    def clean_cron(self) -> str:
        text = self.cleaned_data.get("cron") or ""
        return _checked(check_cron, text) if text.strip() else ""

    def clean_timezone(self) -> str:
        name = (self.cleaned_data.get("timezone") or "").strip()
        _checked(check_zone, name)
        return name

    def clean_interval(self) -> Any:
        interval = self.cleaned_data.get("interval")
        return None if interval is None else _checked(check_interval, interval)

    def clean_task(self) -> str:
        name = (self.cleaned_data.get("task") or "").strip()
        try:
            names.load_task(name)
        except names.TaskNotFound as exc:
            raise forms.ValidationError(str(exc)) from exc
        return name

    def clean_args(self) -> Any:
        value = self.cleaned_data.get("args")
        if value is None:
            return []
        if not isinstance(value, list):
            raise forms.ValidationError('Arguments are a JSON list, e.g. [1, "a"].')
        return value

    def clean_kwargs(self) -> Any:
        value = self.cleaned_data.get("kwargs")
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise forms.ValidationError('Keyword arguments are a JSON object, e.g. {"x": 1}.')
        return value

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if "cron" in self.fields and "interval" in self.fields:
            has_cron, has_interval = bool(data.get("cron")), data.get("interval") is not None
            if has_cron == has_interval and not self.errors.keys() & {"cron", "interval"}:
                raise forms.ValidationError(
                    "Give either a cron expression or an interval, not both."
                )
        return data


class EnabledFilter(ChoiceFilter):
    title = "enabled"
    parameter_name = "enabled"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "Enabled"), ("no", "Disabled")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.valid_value()
        return queryset.filter(enabled=value == "yes") if value else queryset


class SourceFilter(ChoiceFilter):
    title = "declared in"
    parameter_name = "source"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return list(ScheduleSource.choices)

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.valid_value()
        return queryset.filter(source=value) if value else queryset


def _checked(check: Callable[[Any], Any], value: Any) -> Any:
    """``check(value)``, its ``InvalidSchedule`` as the field's error."""
    try:
        return check(value)
    except InvalidSchedule as exc:
        raise forms.ValidationError(str(exc)) from exc


@admin.register(Schedule)
class ScheduleAdmin(CleanParamsMixin, admin.ModelAdmin):
    form = ScheduleForm
    list_display = (
        "name",
        "task",
        "timing",
        "enabled",
        "next_fire",
        "last_fired",
        "last_outcome",
        "source",
    )
    list_filter = (EnabledFilter, SourceFilter)
    search_fields = ("name", "task")
    readonly_fields = ("source", "next_fire", "last_fired", "last_outcome", "last_error")
    actions = ("enable_schedules", "disable_schedules", "run_schedules_now")

    # --- permissions ------------------------------------------------------------

    def has_toggle_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.has_perm("dispatch_jobs.toggle_schedule"))

    def has_run_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.has_perm("dispatch_jobs.run_schedule"))

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        fields = list(self.readonly_fields)
        if obj is not None and obj.source == ScheduleSource.CODE:
            fields = [*DEFINITION, "name", *fields]
        elif obj is not None:
            fields = ["name", *fields]  # code declarations match rows by name
        if not self.has_toggle_permission(request):
            fields.append("enabled")
        return fields

    # --- the list ---------------------------------------------------------------

    def lookup_allowed(self, lookup: str, value: str, request: Any = None) -> bool:
        # Only the list filters filter: a raw field lookup in the URL
        # (?interval=x) would reach the database unconverted. Refused: a 400.
        return False

    @admin.display(description="When")
    def timing(self, schedule: Schedule) -> str:
        if schedule.interval is not None:
            return f"every {duration(schedule.interval)}"
        return f"{schedule.cron} ({schedule.timezone})"

    @admin.display(description="Next fire", ordering="next_fire_at")
    def next_fire(self, schedule: Schedule) -> str:
        if not schedule.enabled:
            return "disabled"
        return moment(schedule.next_fire_at)

    @admin.display(description="Last fired", ordering="last_fired_at")
    def last_fired(self, schedule: Schedule) -> str:
        return moment(schedule.last_fired_at)

    @admin.display(description="Last run")
    def last_outcome(self, schedule: Schedule) -> str:
        if schedule.last_error:
            return format_html(
                '<span class="dj-error" title="{}">error</span>', schedule.last_error
            )
        if schedule.last_job_id is None:
            return EMPTY
        state = getattr(schedule, "last_job_state", None)
        if state is None:
            return f"#{schedule.last_job_id} (purged)"
        url = reverse("admin:dispatch_jobs_job_change", args=[schedule.last_job_id])
        return format_html('<a href="{}">#{} {}</a>', url, schedule.last_job_id, state)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Schedule]:
        # The last job's state by primary key, one index probe per shown row.
        state = reads.jobs().filter(pk=OuterRef("last_job_id")).values("state")[:1]
        queryset = reads.schedules().annotate(last_job_state=Subquery(state))
        ordering = self.get_ordering(request)
        return queryset.order_by(*ordering) if ordering else queryset

    # --- writes, through the store -----------------------------------------------

    def save_model(self, request: HttpRequest, obj: Schedule, form: Any, change: bool) -> None:
        if not change:
            obj.source = ScheduleSource.ADMIN
        store.save_schedule(obj)

    def delete_model(self, request: HttpRequest, obj: Schedule) -> None:
        store.delete_schedule(obj.pk)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Schedule]) -> None:
        for pk in list(queryset.values_list("pk", flat=True)):
            store.delete_schedule(pk)

    @admin.action(description="Enable selected schedules", permissions=["toggle"])
    def enable_schedules(self, request: HttpRequest, queryset: QuerySet[Schedule]) -> None:
        count = store.set_schedules_enabled(list(queryset.values_list("pk", flat=True)), True)
        self.message_user(request, f"{count} schedule(s) enabled.", messages.SUCCESS)

    @admin.action(description="Disable selected schedules", permissions=["toggle"])
    def disable_schedules(self, request: HttpRequest, queryset: QuerySet[Schedule]) -> None:
        count = store.set_schedules_enabled(list(queryset.values_list("pk", flat=True)), False)
        self.message_user(request, f"{count} schedule(s) disabled.", messages.SUCCESS)

    @admin.action(description="Run selected schedules now", permissions=["run"])
    def run_schedules_now(self, request: HttpRequest, queryset: QuerySet[Schedule]) -> None:
        for schedule in queryset:
            try:
                job = scheduler.run_now(schedule)
            except (DispatchJobsError, ValueError, TypeError) as exc:
                self.message_user(
                    request, f"Schedule {schedule.name!r} could not run: {exc}", messages.ERROR
                )
                continue
            self.message_user(
                request, f"Schedule {schedule.name!r}: job #{job.pk} enqueued.", messages.SUCCESS
            )
