"""Reading back what PostgreSQL keeps and Python cannot hold: the admin's pages
and result lookups.

A time column may hold ``infinity``, ``-infinity`` or a year past 9999, and an
interval may run past ``timedelta``'s range: psycopg refuses each such value,
and the refusal fails the whole query. One row written by raw SQL or another
program would then fail every admin page that lists it.

While ``nearest_values`` is active, queries on the store's connection load such
a value as the nearest one Python holds (``datetime.max`` for ``infinity`` and
any later time, ``datetime.min`` for ``-infinity`` and any time before year 1,
``timedelta.max``/``min`` for an interval past them), and every other value as
before. It is scoped to the admin's own views and ``get_result``, never the
project's other queries on the same connection; the worker meets such rows
through the claim, which reads them apart and fails their jobs
(``store.engines.job_rows``).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime, timedelta
from typing import Any

from django.db import connections
from django.http import HttpResponse

from . import database

# The types whose values may fall outside Python's, by PostgreSQL type name.
_TYPES = ("timestamptz", "timestamp", "date", "interval")


@contextlib.contextmanager
def nearest_values() -> Iterator[None]:
    connection = connections[database.alias()]
    if connection.vendor != "postgresql":
        yield  # SQLite's text and MariaDB's ranges are what Python holds
        return
    with connection.execute_wrapper(_loading_nearest):
        yield


def rendered_with_nearest_values(view: Callable[..., Any]) -> Callable[..., Any]:
    """``view`` run, and its response rendered, under ``nearest_values``: a
    template response runs the queries of its lazy lists while it renders."""

    @functools.wraps(view)
    def inner(*args: Any, **kwargs: Any) -> Any:
        with nearest_values():
            response = view(*args, **kwargs)
            if isinstance(response, HttpResponse) and not getattr(response, "is_rendered", True):
                response.render()  # type: ignore[attr-defined]
            return response

    return inner


def _loading_nearest(
    execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any
) -> Any:
    raw = getattr(context.get("cursor"), "cursor", None)
    adapters = getattr(raw, "adapters", None)
    if adapters is not None:
        from psycopg.pq import Format

        for name in _TYPES:
            info = adapters.types.get(name)
            if info is None:
                continue
            # Django reads text; a loader for binary results is left as it is.
            base = adapters.get_loader(info.oid, Format.TEXT)
            if base is not None and not getattr(base, "_dispatch_jobs_nearest", False):
                adapters.register_loader(info.oid, _nearest_loader(base, name))
    return execute(sql, params, many, context)


@functools.cache
def _nearest_loader(base: type, name: str) -> type:
    """A loader of type ``name`` that loads as ``base`` (the loader Django or
    psycopg has registered for it) does, and a value ``base`` refuses as the
    nearest one Python holds. It wraps ``base``: psycopg's own are C types."""
    import psycopg
    from psycopg.adapt import Loader

    class Nearest(Loader):
        _dispatch_jobs_nearest = True

        def __init__(self, oid: int, context: Any = None) -> None:
            super().__init__(oid, context)
            self.base = base(oid, context)

        def load(self, data: Any) -> Any:
            try:
                return self.base.load(data)
            except (psycopg.DataError, ValueError, OverflowError):
                timezone = getattr(self.base, "timezone", None) or UTC
                return _nearest(name, bytes(data), timezone)

    Nearest.__name__ = f"Nearest{base.__name__}"
    return Nearest


def _nearest(name: str, data: bytes, timezone: Any) -> Any:
    """The value of a refused ``data`` (a value's text form) at the end it lies
    beyond."""
    text = data.decode("ascii", "replace").strip()
    low = text.startswith("-") or text.endswith(" BC")
    if name == "interval":
        return timedelta.min if low else timedelta.max
    if name == "date":
        return date.min if low else date.max
    value = datetime.min if low else datetime.max
    if name == "timestamptz":
        return value.replace(tzinfo=timezone or UTC)
    return value
