"""The store's read side: querysets over the app's tables, on the jobs database,
for everything outside ``store/`` that lists, counts or shows rows (the admin,
metrics, the worker's summaries, ``dispatch_jobs.testing``).

They read like any queryset and refuse to write: ``update``, ``delete``,
``create`` and the bulk writes raise ``ReadOnlyRows``, so the store's verbs stay
the one way rows change (the write seam, tests/seam.py).

A list of jobs reads its page and its counts through ``first_rows``,
``count_at_most`` and ``count_rows``. Where the job table's filter indexes hold
finished rows only (PostgreSQL, migration 0015), a list filtered on one of their
columns is read in a live and a finished part, in one statement (``UNION ALL``):
a condition on the state that the partial indexes' own implies is what lets the
planner use them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import cache
from typing import Any, NoReturn

from django.db import models
from django.db.models.expressions import Col

from ..database import alias
from ..exceptions import ReadOnlyRows
from ..models import (
    FINISHED_STATES,
    READY_STATES,
    Job,
    JobQuerySet,
    QueueControl,
    Schedule,
    ScheduleTick,
    TaskMinute,
    Usage,
    Worker,
)
from ..models.jobs import JobState
from .engines import engine_for

# Every state a job is in before it finishes (FINISHED_STATES: after).
LIVE_STATES = (JobState.PENDING, JobState.RETRYING, JobState.RUNNING)


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


# --- Lists of jobs: live and finished rows apart where the indexes are apart.


# The columns of the indexes that hold finished jobs only (migration 0015).
FINISHED_ONLY_COLUMNS = frozenset(
    {"queue", "name", "scope_app_id", "scope_org_id", "worker_id", "payload"}
)


def _parts[M: models.Model](queryset: models.QuerySet[M]) -> list[models.QuerySet[M]]:
    """``queryset`` as the parts a list reads: live and finished jobs apart when
    it filters on a column whose index holds finished jobs only, on an engine
    whose indexes are so; otherwise itself (the primary key, the state index
    and the sort keys' indexes hold every row: one part reads them best)."""
    if (
        queryset.model is not Job
        or queryset.query.is_empty()  # .none(): Django reads nothing, nor would a part
        or not engine_for(queryset.db).finished_apart
        or FINISHED_ONLY_COLUMNS.isdisjoint(_columns(queryset.query.where))
    ):
        return [queryset]
    # The live part in two: the waiting jobs (a backlog may be millions) under
    # the ready index's own condition, so a queue filter seeks it; the running
    # ones (a fleet's concurrency) under the lease index's.
    return [
        queryset.filter(state__in=READY_STATES),
        queryset.filter(state=JobState.RUNNING),
        queryset.filter(state__in=FINISHED_STATES),
    ]


def _columns(node: Any) -> Iterator[str]:
    """The columns a WHERE clause (or any part of one) compares."""
    if isinstance(node, Col):
        yield str(node.target.column)
        return
    children = getattr(node, "children", None)  # a WhereNode: its conditions
    sources = children if children is not None else _sources(node)
    for source in sources:
        if source is not None:
            yield from _columns(source)


def _sources(node: Any) -> list[Any]:
    get = getattr(node, "get_source_expressions", None)
    return list(get()) if get is not None else []


def first_rows[M: models.Model](
    queryset: models.QuerySet[M], ordering: Sequence[Any], limit: int
) -> list[M]:
    """The first ``limit`` rows of ``queryset`` in ``ordering`` (a total order:
    it ends with the primary key), in one statement: each part's first
    ``limit`` in its own index's order, merged by the database."""
    if limit <= 0:
        return []
    windows = [part.order_by(*ordering)[:limit] for part in _parts(queryset)]
    if len(windows) == 1:
        return list(windows[0])
    return list(windows[0].union(*windows[1:], all=True).order_by(*ordering)[:limit])


def count_at_most(queryset: models.QuerySet[Any], limit: int) -> int:
    """How many rows match, up to ``limit``: it reads at most ``limit`` ids
    (``SELECT id ... LIMIT limit``), never counts them all."""
    if limit <= 0:
        return 0
    # Finished jobs first: unordered, the database reads the parts in turn and
    # stops at ``limit``, and most jobs of a long-lived table are finished ones.
    parts = _parts(queryset)[::-1]
    windows = [part.order_by().values_list("pk", flat=True)[:limit] for part in parts]
    if len(windows) == 1:
        return len(windows[0])
    # order_by(): no ORDER BY on the whole (the model's default would sort every id).
    return len(windows[0].union(*windows[1:], all=True).order_by()[:limit])


def count_rows(queryset: models.QuerySet[Any]) -> int:
    """How many rows match, counted in full (every part through its indexes)."""
    ids = [part.order_by().values_list("pk", flat=True) for part in _parts(queryset)]
    if len(ids) == 1:
        return ids[0].count()
    return ids[0].union(*ids[1:], all=True).count()
