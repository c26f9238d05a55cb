"""PostgreSQL: the cursor the store's hot statements run on, prepared where the
alias allows it.

Django's PostgreSQL backend with psycopg 3 binds parameters on the client and
prepares nothing (``prepare_threshold`` is ``None``): PgBouncer before 1.21 in
transaction mode cannot carry a prepared statement from one server connection to
the next. An alias whose OPTIONS set ``prepare_threshold`` says its connections
can hold them (a direct connection, or a pooler that carries them). There the
store runs its hot statements (the enqueue INSERT, the claim, the completion
batch) on a cursor that binds on the server, which psycopg prepares once it has
run a statement ``prepare_threshold`` times: PostgreSQL then plans each of them
once per connection instead of at every call, and planning these statements costs
the database about as much as running them (docs/deployment.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import DataError, NotSupportedError

from .job_rows import Unreadable


def prepares(connection: Any) -> bool:
    """Whether the store prepares its statements on this connection: its alias's
    OPTIONS set psycopg's ``prepare_threshold`` (Django leaves it ``None``), and
    it is not logging its queries (``DEBUG``, or a test capturing them). A cursor
    that binds on the server leaves Django no statement text to log, so a logged
    connection keeps the usual cursor: the log shows each statement as it ran."""
    if connection.settings_dict.get("OPTIONS", {}).get("prepare_threshold") is None:
        return False
    return not connection.queries_logged


def binds_client_side(connection: Any) -> bool:
    """Whether the connection's own cursors bind parameters on the client
    (Django's default for psycopg 3), which lets one execute() carry several
    statements."""
    return not connection.settings_dict.get("OPTIONS", {}).get("server_side_binding")


def server_cursor(connection: Any) -> Any:
    """A cursor that binds on the server, which psycopg prepares once it has run
    a statement ``prepare_threshold`` times; Django's cursor wrapper all the same
    (errors are Django's, and the statement is logged and counted as any)."""
    from django.db.backends.postgresql import base

    binding: Any = base.ServerBindingCursor  # psycopg 3's, which the stubs do not know
    connection.close_if_health_check_failed()
    connection.ensure_connection()
    with connection.wrap_database_errors:
        return connection._prepare_cursor(binding(connection.connection))


def kept_cursor(connection: Any) -> Any | None:
    """``server_cursor``, kept on the connection from one call to the next, for the
    one-row INSERT in autocommit: opening and closing a cursor per enqueue cost
    about a tenth of its time (``bench.hotpath --only single``). Still Django's
    wrapper: the project's ``execute_wrapper()``s, error translation and anything
    that instruments Django's cursors see the statement. None where the store does
    not prepare (``prepares``), and on a connection shared between threads (one
    cursor's result would then be another thread's to read)."""
    if not prepares(connection) or connection.allow_thread_sharing:
        return None
    # What opening a cursor checks first, here at every use of the kept one.
    connection.close_if_health_check_failed()
    connection.ensure_connection()
    connection.validate_thread_sharing()
    kept = getattr(connection, "_dispatch_jobs_cursor", None)
    if kept is None or kept.cursor.connection is not connection.connection or kept.cursor.closed:
        kept = connection._dispatch_jobs_cursor = server_cursor(connection)
    return kept


def prepared_cursor(connection: Any) -> Any | None:
    """``server_cursor`` where the store prepares on this connection, else None."""
    return server_cursor(connection) if prepares(connection) else None


def statement_cursor(connection: Any) -> Any:
    """The cursor for a statement the store runs at every claim or completion:
    prepared where the alias allows it, else the connection's usual one."""
    return prepared_cursor(connection) or connection.cursor()


def replanned[T](connection: Any, run: Callable[[], T]) -> T:
    """``run()``; should a prepared statement have outlived a change to the job
    table's columns (a migration run while this worker holds the statement:
    PostgreSQL refuses it with "cached plan must not change result type"), the
    connection is closed, taking its prepared statements with it, and ``run``
    runs once more on a fresh one. Inside a transaction the error has aborted it:
    raised, for the transaction's owner."""
    try:
        return run()
    except NotSupportedError as exc:
        if not _stale_plan(exc) or connection.in_atomic_block:
            raise
    connection.close()
    return run()


def _stale_plan(exc: BaseException) -> bool:
    cause = exc.__cause__
    return getattr(cause, "sqlstate", None) == "0A000" and "cached plan" in str(cause)


def fetched(cursor: Any) -> tuple[list[Any], bool]:
    """Every row of the result ``cursor`` (Django's wrapper) holds, and whether it
    was read apart. psycopg loads a whole fetch at once, so one value it cannot
    load (a time PostgreSQL keeps and Python cannot hold: ``infinity``, after year
    9999) would fail every row beside it: then the rows are read one by one, and
    such a value comes back as ``Unreadable`` for its row alone."""
    try:
        return cursor.fetchall(), False
    except (DataError, ValueError, OverflowError):
        return _fetched_apart(cursor.cursor), True


def _fetched_apart(raw: Any) -> list[Any]:
    import psycopg
    from psycopg import pq

    result = raw.pgresult
    rows: list[Any] = []
    for position in range(result.ntuples):
        raw.scroll(position, "absolute")
        try:
            rows.append(raw.fetchone())
            continue
        except (psycopg.DataError, ValueError, OverflowError):
            pass
        values: list[Any] = []
        for column in range(result.nfields):
            data = result.get_value(position, column)
            if data is None:
                values.append(None)
                continue
            oid, form = result.ftype(column), pq.Format(result.fformat(column))
            try:
                values.append(raw.adapters.get_loader(oid, form)(oid, raw).load(data))
            except (psycopg.DataError, ValueError, OverflowError) as exc:
                values.append(Unreadable(str(exc)))
        rows.append(tuple(values))
    return rows
