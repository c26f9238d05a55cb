"""Transient database errors: retried with backoff, never turned into job failures.

A dropped connection or a busy SQLite file says nothing about the job. The write
is retried on a fresh connection until it lands or the worker is told to stop; if
it never lands, the lease simply expires and the job is reclaimed: never lost.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable

from django.db import InterfaceError, OperationalError

from .. import database
from ..exceptions import GaveUp
from ..store import refused_by_content

TRANSIENT_ERRORS = (OperationalError, InterfaceError)
logger = logging.getLogger("dispatch_jobs.worker")


def retry_transient[T](
    action: Callable[[], T],
    what: str,
    *,
    stop: threading.Event | None = None,
    first_delay: float = 0.05,
    max_delay: float = 2.0,
) -> T:
    """Run ``action`` until it succeeds; on a transient error, reconnect and retry
    with exponential backoff. Raises ``GaveUp`` once ``stop`` is set."""
    delay = first_delay
    while True:
        try:
            return action()
        except TRANSIENT_ERRORS as exc:
            if refused_by_content(exc):
                raise  # the values are the problem: retrying them cannot help
            if database.connection().in_atomic_block:
                raise  # inside the caller's transaction: only its owner can recover
            logger.warning(
                "Transient database error while %s (retrying in %.2fs): %s", what, delay, exc
            )
            reset_connection()
        waiter = stop or threading.Event()
        if waiter.wait(delay):
            raise GaveUp(what)
        delay = min(delay * 2, max_delay)


def reset_connection() -> None:
    """Drop this thread's broken connection so the next query opens a fresh one
    (unless it is inside an atomic block, which its owner must unwind)."""
    connection = database.connection()
    if not connection.in_atomic_block:
        with contextlib.suppress(Exception):  # it is already broken
            connection.close()
