"""Pacing: poll again at once after dispatching, back off exponentially to the
maximum while idle, and on PostgreSQL wake at once on ``NOTIFY``.

Polling is the guarantee; a notification only shortens the wait. A lost one (the
listener reconnecting, a notify before LISTEN) costs at most one poll interval.

LISTEN runs on its own connection, to ``LISTEN_DATABASE`` when set (a direct
connection beside a transaction-mode pooler, which cannot carry LISTEN), else to
``DATABASE``. Each time it connects it proves it can hear: it sends itself a probe
notification from a second connection. A listener that hears nothing (LISTEN through
PgBouncer in transaction mode) says so and leaves the worker to polling.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from django.db import connections

from .. import store
from ..conf import settings
from ..exceptions import Deaf

# How long a new LISTEN connection waits for its own probe notification, and how
# long a deaf one waits before trying again (a pooler does not change its mind soon).
PROBE_TIMEOUT = 10.0
DEAF_RETRY = 300.0
PROBE_PREFIX = "dispatch_jobs:probe:"


logger = logging.getLogger("dispatch_jobs.worker")


class Pacer:
    """The idle delay: ``poll_interval``, doubling to ``max_poll_interval``; reset
    whenever a claim returned work."""

    def __init__(self, poll_interval: timedelta, max_poll_interval: timedelta) -> None:
        self.base = poll_interval.total_seconds()
        self.cap = max_poll_interval.total_seconds()
        self.delay = self.base

    def busy(self) -> None:
        self.delay = self.base

    def idle(self) -> float:
        """The delay to wait now; the next idle wait doubles it (up to the cap)."""
        delay = self.delay
        self.delay = min(self.delay * 2, self.cap)
        return delay


class Listener:
    """PostgreSQL LISTEN on a dedicated autocommit connection; sets ``wake`` when a
    job is enqueued in one of ``queues`` (in any queue when ``queues`` is empty).
    Does nothing on other databases."""

    def __init__(self, queues: Sequence[str], wake: threading.Event, stop: threading.Event):
        self.queues = set(queues)
        self.wake = wake
        self.stop = stop
        self.thread = threading.Thread(target=self._run, name="dispatch-listener", daemon=True)
        self.listening = threading.Event()

    @staticmethod
    def available() -> bool:
        return store.notify_enabled()

    def start(self) -> None:
        if self.available():
            self.thread.start()

    def join(self, timeout: float | None = None) -> None:
        if self.thread.is_alive():
            self.thread.join(timeout)

    def _run(self) -> None:
        delay = 0.5
        while not self.stop.is_set():
            try:
                self._listen()
                delay = 0.5
            except Deaf:
                self.listening.clear()
                logger.warning(
                    "LISTEN over database %r heard no notification within %.0f s: is it a "
                    "transaction-mode pooler such as PgBouncer? Set DISPATCH_JOBS"
                    "['LISTEN_DATABASE'] to a direct connection (docs/deployment.md). Polling "
                    "only; trying again in %.0f s.",
                    settings.listen_database,
                    PROBE_TIMEOUT,
                    DEAF_RETRY,
                )
                self.stop.wait(DEAF_RETRY)
            except Exception as exc:  # noqa: BLE001 - reconnect; polling covers the gap
                self.listening.clear()
                logger.warning("LISTEN connection lost (%s); polling meanwhile.", exc)
                self.stop.wait(delay)
                delay = min(delay * 2, 10.0)

    def _listen(self) -> None:
        import psycopg

        with psycopg.connect(**_connect_kwargs(), autocommit=True) as conn:
            conn.execute(f'LISTEN "{store.NOTIFY_CHANNEL}"')
            self._probe(conn)
            self.listening.set()
            logger.info(
                "Listening for enqueue notifications (PostgreSQL NOTIFY, database %r).",
                settings.listen_database,
            )
            # A notify sent before LISTEN took effect is not delivered: wake once so
            # the fetcher polls, which covers it.
            self.wake.set()
            while not self.stop.is_set():
                for note in conn.notifies(timeout=0.5):
                    if not self.queues or note.payload in self.queues:
                        self.wake.set()

    def _probe(self, conn: Any) -> None:
        """Send a notification from a second connection and wait to hear it: through
        a transaction-mode pooler LISTEN "succeeds" on a server connection that goes
        back to the pool, and nothing ever arrives. Raises ``Deaf`` then."""
        import psycopg

        token = f"{PROBE_PREFIX}{uuid.uuid4().hex}"
        with psycopg.connect(**_connect_kwargs(), autocommit=True) as sender:
            sender.execute("SELECT pg_notify(%s, %s)", [store.NOTIFY_CHANNEL, token])
        end = time.monotonic() + PROBE_TIMEOUT
        while not self.stop.is_set() and time.monotonic() < end:
            for note in conn.notifies(timeout=0.5):
                if note.payload == token:
                    return
                if note.payload in self.queues:
                    self.wake.set()
        if not self.stop.is_set():
            raise Deaf


def _connect_kwargs() -> dict[str, Any]:
    """psycopg connection arguments of the LISTEN alias (``LISTEN_DATABASE``, else
    ``DATABASE``), read from Django's own settings for it."""
    params = connections[settings.listen_database].settings_dict
    kwargs: dict[str, Any] = {"dbname": params["NAME"]}
    for key, name in (("USER", "user"), ("PASSWORD", "password"), ("HOST", "host")):
        if params.get(key):
            kwargs[name] = params[key]
    if params.get("PORT"):
        kwargs["port"] = int(params["PORT"])
    for key in ("sslmode", "sslrootcert", "sslcert", "sslkey", "options"):
        if key in params.get("OPTIONS", {}):
            kwargs[key] = params["OPTIONS"][key]
    return kwargs
