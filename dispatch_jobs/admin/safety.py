"""Keeping admin list queries from pinning the database.

On PostgreSQL every admin list query runs under ``statement_timeout``
(``DISPATCH_JOBS['ADMIN_STATEMENT_TIMEOUT']``). A query that is cancelled
becomes ``QueryTooBroad``, which the views turn into a friendly message asking
the operator to narrow the filter, instead of an error page or a database busy
for minutes. SQLite and MariaDB have no per-transaction statement timeout that
also covers lock waits, so there the queries run unbounded (they are all
index-served and LIMITed).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import OperationalError

from .. import store
from ..conf import settings
from ..exceptions import QueryTooBroad

# PostgreSQL's SQLSTATE for "canceling statement due to statement timeout".
_QUERY_CANCELED = "57014"


def _timed_out(exc: BaseException) -> bool:
    cause = exc.__cause__
    return getattr(cause, "sqlstate", None) == _QUERY_CANCELED


@contextmanager
def bounded_queries() -> Iterator[None]:
    """Run the block's queries under the admin statement timeout (PostgreSQL).

    The timeout is set with ``set_config(..., is_local => true)`` inside a
    transaction, so it ends with that transaction and never leaks onto the
    connection's later queries (a worker or another request sharing it).
    """
    timeout = settings.admin_statement_timeout
    try:
        with store.statement_timeout(timeout):
            yield
    except OperationalError as exc:
        if _timed_out(exc):
            raise QueryTooBroad(timeout.total_seconds()) from exc
        raise
