"""Wake-ups on enqueue: PostgreSQL ``NOTIFY`` so idle workers claim at once.

A notification is sent inside the enqueuing transaction with ``pg_notify``, so it
is delivered when the jobs become visible (at commit) and never when the enqueue
is rolled back. PostgreSQL folds identical (channel, payload) notifications within
one transaction into one, which gives "at most once per transaction and queue".
Polling stays the guarantee: a lost notification only costs one poll interval.
Databases without notifications (``engine.notifies`` false) rely on polling.
"""

from __future__ import annotations

from collections.abc import Iterable

from . import db
from .engines.postgresql import CHANNEL

__all__ = ["CHANNEL", "notify_enabled", "notify_queues"]


def notify_enabled() -> bool:
    return db.engine().notifies


def notify_queues(queues: Iterable[str]) -> None:
    """Send one notification per distinct queue (payload: the queue name)."""
    db.engine().notify(list(queues))
