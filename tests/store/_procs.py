"""Entry points for the concurrency tests' child processes.

This module imports nothing of Django's at import time: a ``spawn``-ed child
imports it before Django is set up, then ``_setup`` points the child at the test
database the parent created and starts Django.
"""

from __future__ import annotations

import os
import time
import traceback
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
    claimed: list[int] = []
    errors: list[str] = []
    try:
        _setup(db_name)
        from tests.store.concurrency import claim_loop

        ready.put(worker_id)
        go.wait(DEADLINE_SECONDS)
        claimed = claim_loop(worker_id, limit, time.monotonic() + DEADLINE_SECONDS, complete=True)
    except BaseException:  # noqa: BLE001 - the parent asserts there were none
        errors.append(traceback.format_exc())
    results.put((worker_id, claimed, errors))


def reclaim_until_empty(
    db_name: str, worker_id: str, limit: int, ready: Queue, go: Event, results: Queue
) -> None:
    """Reclaim expired leases until none is left; report what was reclaimed."""
    reclaimed: list[Any] = []
    errors: list[str] = []
    try:
        _setup(db_name)
        from tests.store.concurrency import reclaim_loop

        ready.put(worker_id)
        go.wait(DEADLINE_SECONDS)
        reclaimed = reclaim_loop(limit, time.monotonic() + DEADLINE_SECONDS)
    except BaseException:  # noqa: BLE001 - the parent asserts there were none
        errors.append(traceback.format_exc())
    results.put((worker_id, reclaimed, errors))
