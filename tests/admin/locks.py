"""A lock held on another connection while the test acts, as a worker's claim
or a long-running query would hold it."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from django.db import connections, transaction

DEADLINE_SECONDS = 30


@contextmanager
def held_elsewhere(take_lock: Callable[[], None]) -> Iterator[None]:
    """Run ``take_lock`` in a transaction on another thread (its own database
    connection), and keep that transaction open until the ``with`` body ends."""
    locked, release = threading.Event(), threading.Event()

    def hold() -> None:
        try:
            with transaction.atomic():
                take_lock()
                locked.set()
                release.wait(timeout=DEADLINE_SECONDS)
        finally:
            connections.close_all()

    thread = threading.Thread(target=hold)
    thread.start()
    try:
        assert locked.wait(timeout=DEADLINE_SECONDS)
        yield
    finally:
        release.set()
        thread.join(timeout=DEADLINE_SECONDS)
