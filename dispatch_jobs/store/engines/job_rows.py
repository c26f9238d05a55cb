"""Claimed rows as jobs: whole job rows, converted as Django converts them, built
into ``Job`` instances. A worker builds hundreds per claim, so this is one of its
hottest paths: the model's constructor is skipped where nothing could tell, and
where every column Django would convert is a JSON one with the default decoder
(PostgreSQL), the rows are decoded by one loop instead of Django's per-value
converter calls."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from django.db.models import JSONField
from django.db.models.base import ModelState
from django.db.models.signals import post_init, pre_init

from ...models import Job
from ...models.stored_json import StoredJSONDecoder
from ...storable import storable_text


class Unreadable(NamedTuple):
    """A value the driver could not load (a time PostgreSQL keeps and Python
    cannot hold: ``infinity``, after year 9999), with the driver's reason."""

    reason: str


def jobs_from_rows(alias: str, rows: Sequence[Sequence[Any]], *, apart: bool = False) -> list[Job]:
    """Whole job rows (every concrete column, in field order) as jobs, converted as
    Django converts them. A worker builds hundreds per claim, so the model's
    constructor is skipped where nothing could tell (``_claimed_job``) and the JSON
    columns' empty containers, most of them, are built without the decoder.

    One row's value that cannot be converted (or that the driver could not load:
    ``Unreadable``, in rows read ``apart``) must not fail the rows beside it: the
    rows are then converted one by one, and such a row's job gets None for that
    column and ``undecodable`` saying which column and why, for the worker to fail
    that job alone (``problem_with``)."""
    if not rows:
        return []
    fields = Job._meta.concrete_fields
    compiler = Job.objects.using(alias).none().query.get_compiler(alias)
    converters = compiler.get_converters([f.get_col(Job._meta.db_table) for f in fields])
    names = [f.attname for f in fields]
    problems: list[dict[str, str]] | None = None
    if apart:
        rows, problems = _converted_apart(compiler, converters, names, rows)
    else:
        try:
            rows = _converted(compiler, converters, rows)
        except Exception:  # noqa: BLE001 - one row's value: found and kept to its job below
            rows, problems = _converted_apart(compiler, converters, names, rows)
    if pre_init.has_listeners(Job) or post_init.has_listeners(Job):
        jobs = [Job.from_db(alias, names, row) for row in rows]
    else:
        jobs = [_claimed_job(alias, names, row) for row in rows]
    for job, problem in zip(jobs, problems or (), strict=False):
        if problem:
            job.undecodable = problem  # type: ignore[attr-defined]
    return jobs


def _converted(compiler: Any, converters: dict[int, Any], rows: Sequence[Sequence[Any]]) -> Any:
    """The rows converted as Django converts them, the fastest way there is."""
    json_positions = _plain_json_positions(converters)
    if json_positions is not None:
        return [_decoded(row, json_positions) for row in rows]
    if not converters:
        return rows
    fast = {
        position: ([_fast_json(f) for f in functions], expression)
        for position, (functions, expression) in converters.items()
    }
    return list(compiler.apply_converters(rows, fast))


def _converted_apart(
    compiler: Any, converters: dict[int, Any], names: Sequence[str], rows: Sequence[Sequence[Any]]
) -> tuple[list[list[Any]], list[dict[str, str]]]:
    """Each row converted on its own and, where that fails, value by value: the
    rows, and per row the columns that could not be read (None in the row) with
    the reason."""
    converted: list[list[Any]] = []
    problems: list[dict[str, str]] = []
    for row in rows:
        try:
            if any(isinstance(value, Unreadable) for value in row):
                raise ValueError("a value the driver could not load")
            [one] = _converted(compiler, converters, [row])
            converted.append(list(one))
            problems.append({})
            continue
        except Exception:  # noqa: BLE001, S110 - read value by value below
            pass
        values, problem = [], {}
        for position, value in enumerate(row):
            try:
                if isinstance(value, Unreadable):
                    raise ValueError(value.reason)
                for function in converters.get(position, ((), None))[0]:
                    value = function(value, converters[position][1], compiler.connection)
            except Exception as exc:  # noqa: BLE001 - this column of this row only
                problem[names[position]] = storable_text(str(exc) or type(exc).__name__, limit=200)
                value = None
            values.append(value)
        converted.append(values)
        problems.append(problem)
    return converted, problems


def _claimed_job(alias: str, names: Sequence[str], row: Sequence[Any]) -> Job:
    """What ``Job.from_db`` builds from a whole row, without ``Model.__init__``:
    with no ``pre_init``/``post_init`` receiver for Job it only sets each field's
    attribute (no field of Job stores through a descriptor but the foreign key's
    id, whose setter only drops a cached related object a new instance lacks)."""
    job = Job.__new__(Job)
    job.__dict__.update(zip(names, row, strict=True))
    state = ModelState()
    state.adding = False
    state.db = alias
    job._state = state
    return job


def _fast_json(converter: Callable[..., Any]) -> Callable[..., Any]:
    """A JSONField's ``from_db_value`` (default decoder) with the empty object and
    array built directly: what ``json.loads`` would return, for a fraction of it."""
    if not _is_plain_json(converter):
        return converter

    def from_db_value(value: Any, expression: Any, connection: Any) -> Any:
        if value == "{}":
            return {}
        if value == "[]":
            return []
        return converter(value, expression, connection)

    return from_db_value


def _is_plain_json(converter: Callable[..., Any]) -> bool:
    """Django's own ``JSONField.from_db_value`` of a field with the default decoder
    or ``StoredJSONDecoder`` (the default's results, a value too deep for it left
    as text): what ``_decoded`` does."""
    field = getattr(converter, "__self__", None)
    return (
        isinstance(field, JSONField)
        and field.decoder in (None, StoredJSONDecoder)
        and getattr(converter, "__func__", None) is JSONField.from_db_value
    )


def _plain_json_positions(converters: dict[int, Any]) -> list[int] | None:
    """The positions of the columns to decode when Django's only converters are
    plain JSON ones, one each (PostgreSQL: its driver loads every other column);
    None when any other converter is there (SQLite's datetimes, say)."""
    positions = []
    for position, (functions, _expression) in converters.items():
        if len(functions) != 1 or not _is_plain_json(functions[0]):
            return None
        positions.append(position)
    return positions


def _decoded(row: Sequence[Any], positions: Sequence[int]) -> list[Any]:
    """``row`` with its JSON columns decoded as ``JSONField.from_db_value`` decodes
    a column's value with ``StoredJSONDecoder`` (NULL stays None; text that is not
    JSON, or JSON nested deeper than the decoder follows, stays the text, for the
    worker to fail that job alone, not the claim of every row beside it); the
    empty object and array, most of them, built without the decoder."""
    values = list(row)
    for position in positions:
        value = values[position]
        if value is None:
            continue
        if value == "{}":
            values[position] = {}
        elif value == "[]":
            values[position] = []
        else:
            try:  # noqa: SIM105 - suppress() costs a context manager per value
                values[position] = json.loads(value)
            except (json.JSONDecodeError, RecursionError):
                pass
    return values
