"""The job list's filters. Every choice is fixed or comes from configuration and
the small tables (TASKS' queues, paused queues, live workers), never from a
``SELECT DISTINCT`` over the jobs table, and every filter narrows through an
index (see ``JOB_SORT_KEYS`` and the model's indexes)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

from django.contrib import admin
from django.db.models import Q, QuerySet
from django.http import HttpRequest

from .. import database
from ..models import JobState
from .paging import COUNT_VAR, CURSOR_VAR, SORT_VAR
from .queues import fleet

_NOT_CARRIED = {CURSOR_VAR, COUNT_VAR, "p", "e"}


class ChoiceFilter(admin.SimpleListFilter):
    """A filter whose choices are fixed; an unknown value filters nothing."""

    def valid_value(self) -> str | None:
        value = self.value()
        return value if value in {str(key) for key, _ in self.lookup_choices} else None


class StateFilter(ChoiceFilter):
    title = "state"
    parameter_name = "state"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return list(JobState.choices)

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.valid_value()
        return queryset.filter(state=value) if value else queryset


class QueueFilter(admin.SimpleListFilter):
    title = "queue"
    parameter_name = "queue"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        queues = list(fleet(request).queues)
        value = self.value()
        if value and value not in queues:
            queues.append(value)  # a queue typed into the URL is still honoured
        return [(name, name) for name in queues]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        return queryset.filter(queue=value) if value else queryset


class PriorityFilter(ChoiceFilter):
    title = "priority"
    parameter_name = "priority"
    _BANDS = {"high": Q(priority__gt=0), "normal": Q(priority=0), "low": Q(priority__lt=0)}

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("high", "High (> 0)"), ("normal", "Normal (0)"), ("low", "Low (< 0)")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.valid_value()
        return queryset.filter(self._BANDS[value]) if value else queryset


class TimeRangeFilter(ChoiceFilter):
    """Rows whose ``field`` falls in a window ending at the database's now."""

    field = ""
    _WINDOWS = {
        "1h": ("Last hour", timedelta(hours=1)),
        "24h": ("Last 24 hours", timedelta(days=1)),
        "7d": ("Last 7 days", timedelta(days=7)),
    }

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(key, label) for key, (label, _) in self._WINDOWS.items()] + [
            ("older", "Older than 7 days")
        ]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.valid_value()
        if not value:
            return queryset
        if value == "older":
            return queryset.filter(**{f"{self.field}__lt": database.now_minus(timedelta(days=7))})
        window = self._WINDOWS[value][1]
        return queryset.filter(**{f"{self.field}__gte": database.now_minus(window)})


class EnqueuedFilter(TimeRangeFilter):
    title = "enqueued"
    parameter_name = "enqueued"
    field = "created_at"


class FinishedFilter(TimeRangeFilter):
    title = "finished"
    parameter_name = "finished"
    field = "completed_at"


class TextFilter(admin.SimpleListFilter):
    """An exact-match filter typed into a box (plus optional suggestions), for
    values with no fixed list: task names, scope ids, worker ids."""

    field = ""
    placeholder = "exact value"
    template = "dispatch_jobs/admin/filter_text.html"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return self.suggestions()

    def suggestions(self) -> list[tuple[str, str]]:
        """Values offered as links under the box."""
        return []

    def options(self) -> list[str]:
        """Values the box offers as the operator types (an HTML datalist)."""
        return []

    def has_output(self) -> bool:
        return True

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = (self.value() or "").strip()
        return queryset.filter(**{self.field: value}) if value else queryset

    def choices(self, changelist: Any) -> Iterator[Any]:
        keep = [
            (key, value)
            for key, value in sorted(changelist.params.items())
            if key != self.parameter_name and key not in _NOT_CARRIED
        ]
        yield {
            "text": True,
            "value": self.value() or "",
            "placeholder": self.placeholder,
            "options": self.options(),
            "hidden": keep,
            "clear_query": changelist.get_query_string(remove=[self.parameter_name]),
        }
        for key, label in self.lookup_choices:
            yield {
                "selected": self.value() == key,
                "query_string": changelist.get_query_string({self.parameter_name: key}),
                "display": label,
            }


# Task names offered by the task filter: at most this many, from the rollup.
KNOWN_TASKS_SHOWN = 200
KNOWN_TASKS_LINKED = 12


def known_tasks(request: HttpRequest) -> list[str]:
    """Task names that finished jobs in the rollup's retention (``TaskMinute``,
    a small table, never the jobs table), read with the queues and workers in
    the request's one ``fleet`` query."""
    return fleet(request).tasks[:KNOWN_TASKS_SHOWN]


class TaskFilter(TextFilter):
    """A known task name (offered from the rollup) matches exactly, through the
    (name, id) index; anything else matches as a substring of the name, which
    no index serves: the list reads newest-first until it has a page, under the
    statement timeout (see docs/admin.md, "Task names")."""

    title = "task name"
    parameter_name = "task"
    field = "name"
    placeholder = "name or part of it"

    def suggestions(self) -> list[tuple[str, str]]:
        return [(name, name) for name in known_tasks(self.request)[:KNOWN_TASKS_LINKED]]

    def options(self) -> list[str]:
        return known_tasks(self.request)

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = (self.value() or "").strip()
        if not value:
            return queryset
        if value in known_tasks(request):
            return queryset.filter(name=value)
        return queryset.filter(name__icontains=value)


class ScopeAppFilter(TextFilter):
    title = "scope app"
    parameter_name = "app"
    field = "scope_app_id"


class ScopeOrgFilter(TextFilter):
    title = "scope org"
    parameter_name = "org"
    field = "scope_org_id"


class WorkerFilter(TextFilter):
    title = "worker"
    parameter_name = "worker"
    field = "worker_id"

    def suggestions(self) -> list[tuple[str, str]]:
        # The registry of live workers is a small table; the jobs table is not read.
        return [(worker_id, worker_id) for worker_id in fleet(self.request).worker_ids[:20]]


class SortFilter(ChoiceFilter):
    """The order of the list: only whitelisted keys, each served by an index.
    Shown with the filters; applying it narrows to rows that have the key."""

    title = "sort"
    parameter_name = SORT_VAR

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        self.model_admin = model_admin
        return [(key.value, key.label) for key in model_admin.sort_keys]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        # The ChangeList orders; here only rows lacking the key (NULL) drop out,
        # so "apply to all matching" acts on exactly the rows the list shows.
        return self.model_admin.get_sort_key(self.request).restrict(queryset)

    def choices(self, changelist: Any) -> Iterator[Any]:
        current = changelist.model_admin.get_sort_key(self.request).value
        for key, label in self.lookup_choices:
            yield {
                "selected": key == current,
                "query_string": changelist.get_query_string({self.parameter_name: key}),
                "display": label,
            }
