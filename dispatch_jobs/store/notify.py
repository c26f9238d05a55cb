"""Wake-ups on enqueue: PostgreSQL ``NOTIFY`` so idle workers claim at once.

A notification is sent inside the enqueuing transaction with ``pg_notify``, so it
is delivered when the jobs become visible (at commit) and never when the enqueue
is rolled back. PostgreSQL folds identical (channel, payload) notifications within
one transaction into one, which gives "at most once per transaction and queue".
Polling stays the guarantee: a lost notification only costs one poll interval.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db import connections

from ..conf import settings
from . import db

CHANNEL = "dispatch_jobs"


def notify_enabled() -> bool:
    return settings.notify and db.vendor() == "postgresql"


def notify_queues(queues: Iterable[str]) -> None:
    """Send one notification per distinct queue (payload: the queue name)."""
    names = sorted(set(queues))
    if not names or not notify_enabled():
        return
    with connections[db.alias()].cursor() as cursor:
        cursor.execute("SELECT pg_notify(%s, q) FROM unnest(%s::text[]) AS q", [CHANNEL, names])
