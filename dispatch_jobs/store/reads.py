"""The store's read side: querysets over the app's tables, on the jobs database,
for everything outside ``store/`` that lists, counts or shows rows (the admin,
metrics, the worker's summaries, ``dispatch_jobs.testing``).

They read like any queryset and refuse to write: ``update``, ``delete``,
``create`` and the bulk writes raise ``ReadOnlyRows``, so the store's verbs stay
the one way rows change (the write seam, tests/seam.py).
"""

from __future__ import annotations

from functools import cache
from typing import Any, NoReturn

from django.db import models

from ..database import alias
from ..exceptions import ReadOnlyRows
from ..models import (
    Job,
    JobQuerySet,
    QueueControl,
    Schedule,
    ScheduleTick,
    TaskMinute,
    Usage,
    Worker,
)


class _ReadOnly:
    """Mixed into a model's queryset class: every write method refuses."""

    def _refuse(self, verb: str) -> NoReturn:
        model = self.model  # type: ignore[attr-defined]
        raise ReadOnlyRows(
            f"{model.__name__} rows read through dispatch_jobs.store.reads cannot be "
            f"written ({verb}); use the store's verbs."
        )

    def update(self, **kwargs: Any) -> NoReturn:
        self._refuse("update")

    def delete(self) -> NoReturn:
        self._refuse("delete")

    def create(self, **kwargs: Any) -> NoReturn:
        self._refuse("create")

    def get_or_create(self, *args: Any, **kwargs: Any) -> NoReturn:
        self._refuse("get_or_create")

    def update_or_create(self, *args: Any, **kwargs: Any) -> NoReturn:
        self._refuse("update_or_create")

    def bulk_create(self, *args: Any, **kwargs: Any) -> NoReturn:
        self._refuse("bulk_create")

    def bulk_update(self, *args: Any, **kwargs: Any) -> NoReturn:
        self._refuse("bulk_update")


@cache
def _read_only_class(queryset_class: type[models.QuerySet[Any]]) -> type[models.QuerySet[Any]]:
    return type(f"ReadOnly{queryset_class.__name__}", (_ReadOnly, queryset_class), {})


def _rows[M: models.Model](model: type[M]) -> models.QuerySet[M]:
    queryset = model._default_manager.using(alias()).all()
    queryset.__class__ = _read_only_class(type(queryset))
    return queryset


def jobs() -> JobQuerySet:
    return _rows(Job)  # type: ignore[return-value]


def usage() -> models.QuerySet[Usage]:
    return _rows(Usage)


def workers() -> models.QuerySet[Worker]:
    return _rows(Worker)


def queue_controls() -> models.QuerySet[QueueControl]:
    return _rows(QueueControl)


def task_minutes() -> models.QuerySet[TaskMinute]:
    return _rows(TaskMinute)


def schedules() -> models.QuerySet[Schedule]:
    return _rows(Schedule)


def schedule_ticks() -> models.QuerySet[ScheduleTick]:
    return _rows(ScheduleTick)
