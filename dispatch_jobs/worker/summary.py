"""Counters, the start-up banner and the periodic one-line summary."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping

from .. import database
from .config import WorkerConfig

logger = logging.getLogger("dispatch_jobs.worker")


class Stats:
    """What a worker did, thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.started = time.monotonic()
        self.completed = self.failed = self.retried = self.discarded = self.dispatched = 0
        self._window_start = self.started
        self._window_done = 0

    def count(self, field: str) -> None:
        self.add({field: 1})

    def add(self, counts: Mapping[str, int]) -> None:
        """Several counters at once (a written batch), under one lock."""
        with self._lock:
            for field, by in counts.items():
                setattr(self, field, getattr(self, field) + by)

    @property
    def finished(self) -> int:
        return self.completed + self.failed + self.retried

    def line(self, in_flight: int) -> str:
        """One summary line; the rate is over the window since the last line."""
        with self._lock:
            now = time.monotonic()
            elapsed = max(now - self._window_start, 1e-9)
            rate = (self.finished - self._window_done) / elapsed
            self._window_start, self._window_done = now, self.finished
            return (
                f"{rate:.1f} jobs/s, in flight {in_flight}, completed {self.completed}, "
                f"retries {self.retried}, failures {self.failed}, discarded {self.discarded}"
            )


def banner(config: WorkerConfig) -> str:
    settings_dict = database.connection().settings_dict
    return (
        f"runjobs {config.worker_id} starting: database {database.vendor()} "
        f"{settings_dict.get('NAME')!s}, {config.describe()}"
    )


class Summary:
    """Logs ``Stats.line`` every ``interval`` (checked by the caller's loop)."""

    def __init__(self, stats: Stats, interval: float) -> None:
        self.stats = stats
        self.interval = interval
        self.next_at = time.monotonic() + interval

    def maybe_log(self, in_flight: int) -> None:
        if time.monotonic() >= self.next_at:
            self.next_at = time.monotonic() + self.interval
            logger.info("Summary: %s", self.stats.line(in_flight))
