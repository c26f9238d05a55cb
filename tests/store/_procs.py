"""Entry points for the concurrency tests' child processes.

This module imports nothing of Django's at import time: a ``spawn``-ed child
imports it before Django is set up, then ``_setup`` points the child at the test
database the parent created and starts Django.
"""

from __future__ import annotations

import os
import time
import traceback
from collections.abc import Callable
from functools import partial
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event
from typing import Any

DEADLINE_SECONDS = 90.0


def _setup(db_name: str) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    import django
    from django.conf import settings

    # The test database pytest-django created, not the one DATABASE_URL names.
    settings.DATABASES["default"]["NAME"] = db_name
    django.setup()


def claim_until_empty(
    db_name: str, worker_id: str, limit: int, ready: Queue, go: Event, results: Queue
) -> None:
    """Claim with small limits and complete each job through the fenced write, as a
    worker does, until no ready job is left; report what was claimed."""

    def prepare() -> Callable[[float], list[Any]]:
        from tests.store.concurrency import claim_loop

        return partial(claim_loop, worker_id, limit, complete=True)

    _run_released(db_name, worker_id, ready, go, results, prepare)


def reclaim_until_empty(
    db_name: str, worker_id: str, limit: int, ready: Queue, go: Event, results: Queue
) -> None:
    """Reclaim expired leases until none is left; report what was reclaimed."""

    def prepare() -> Callable[[float], list[Any]]:
        from tests.store.concurrency import reclaim_loop

        return partial(reclaim_loop, limit)

    _run_released(db_name, worker_id, ready, go, results, prepare)


def _run_released(
    db_name: str,
    worker_id: str,
    ready: Queue,
    go: Event,
    results: Queue,
    prepare: Callable[[], Callable[[float], list[Any]]],
) -> None:
    """Set Django up and ``prepare()`` the loop (imports included) before saying
    ready, so that once ``go`` is set every child starts racing at once; then run
    ``loop(deadline)`` and report what it found and any traceback."""
    found: list[Any] = []
    errors: list[str] = []
    try:
        _setup(db_name)
        loop = prepare()
        ready.put(worker_id)
        go.wait(DEADLINE_SECONDS)
        found = loop(time.monotonic() + DEADLINE_SECONDS)
    except BaseException:  # noqa: BLE001 - the parent asserts there were none
        errors.append(traceback.format_exc())
    results.put((worker_id, found, errors))
