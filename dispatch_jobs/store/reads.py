"""The store's read side: querysets over the app's tables, on the jobs database,
for everything outside ``store/`` that lists, counts or shows rows (the admin,
metrics, the worker's summaries, ``dispatch_jobs.testing``).

They read like any queryset and refuse to write: ``update``, ``delete``,
``create`` and the bulk writes raise ``ReadOnlyRows``, so the store's verbs stay
the one way rows change (the write seam, tests/seam.py).

A list of jobs reads its page and its counts through ``first_rows``,
``count_at_most`` and ``count_rows``. Where the job table's indexes are partial
(PostgreSQL: the filter indexes hold finished rows only, migration 0015; the
state index and the sort keys' every row but the running ones, 0017), a list
that filters or sorts on one of their columns is read in parts by state, in one
statement (``UNION ALL``): a condition on the state that the partial indexes'
own implies is what lets the planner use them.
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


# The columns of the indexes that hold finished jobs only (migration 0015) ...
FINISHED_ONLY_COLUMNS = frozenset(
    {"queue", "name", "scope_app_id", "scope_org_id", "worker_id", "payload"}
)
# ... and of those that hold every job but the running ones (migration 0017).
NOT_RUNNING_COLUMNS = frozenset({"state", "priority", "created_at"})


def _parts[M: models.Model](
    queryset: models.QuerySet[M], ordering: Sequence[Any] = ()
) -> list[models.QuerySet[M]]:
    """``queryset`` as the parts a list reads, in ``ordering``: on an engine whose
    job indexes are partial (``finished_apart``), the jobs apart by state where
    the list filters or sorts on a column whose index holds some states only;
    otherwise itself (the primary key holds every row: one part reads it best).
    The parts are disjoint and together hold every row of ``queryset``."""
    if (
        queryset.model is not Job
        or queryset.query.is_empty()  # .none(): Django reads nothing, nor would a part
        or not engine_for(queryset.db).finished_apart
    ):
        return [queryset]
    columns = {*_columns(queryset.query.where), *_ordering_columns(ordering)}
    if not FINISHED_ONLY_COLUMNS.isdisjoint(columns):
        # The live part in two: the waiting jobs (a backlog may be millions) under
        # the ready index's own condition, so a queue filter seeks it; the running
        # ones (a fleet's concurrency) under the lease index's.
        return [
            queryset.filter(state__in=READY_STATES),
            queryset.filter(state=JobState.RUNNING),
            queryset.filter(state__in=FINISHED_STATES),
        ]
    if NOT_RUNNING_COLUMNS.isdisjoint(columns):
        return [queryset]
    states = _states(queryset.query.where)
    if states is not None and (JobState.RUNNING not in states or states == {JobState.RUNNING}):
        # Its own condition implies one index's: the running jobs' (the lease
        # index) or everyone else's (the state index, the sort keys').
        return [queryset]
    return [queryset.exclude(state=JobState.RUNNING), queryset.filter(state=JobState.RUNNING)]


def _states(where: Any) -> set[str] | None:
    """The states a WHERE clause's top-level conditions leave possible (``state =``
    and ``state IN`` of constants, joined by AND), or None where they do not bound them."""
    if where.connector != "AND" or where.negated:
        return None
    states: set[str] | None = None
    for child in where.children:
        target = getattr(getattr(child, "lhs", None), "target", None)
        if getattr(target, "column", None) != "state":
            continue
        lookup, rhs = getattr(child, "lookup_name", None), child.rhs
        values = [rhs] if lookup == "exact" else rhs if lookup == "in" else None
        if not isinstance(values, list | tuple) or not all(isinstance(v, str) for v in values):
            continue  # another lookup, an expression or a subquery: nothing known
        states = set(values) if states is None else states & set(values)
    return states


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


def _ordering_columns(ordering: Sequence[Any]) -> Iterator[str]:
    """The columns an ordering names (``"-priority"``, ``F("priority").desc()``)."""
    for item in ordering:
        expression = getattr(item, "expression", item)  # an OrderBy's own
        name = expression if isinstance(expression, str) else getattr(expression, "name", "")
        yield name.lstrip("-")


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
    windows = [part.order_by(*ordering)[:limit] for part in _parts(queryset, ordering)]
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
