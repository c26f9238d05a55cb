"""The executor threads: a fixed set of ``concurrency`` threads fed by a queue.

Each thread runs one job at a time with its own database connection (the
handler's queries), kept from job to job and closed when the worker stops.
Starting a thread per job cost more than running a no-op job. The inbox is a
``SimpleQueue`` (C, one short lock per put and get): ``queue.Queue``'s Python
conditions, taken twice per job by threads contending for the GIL, showed as
the largest exclusive cost in a drain's profile.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable

from django.db import connections

from .inflight import Held


class Executors:
    """``size`` daemon threads calling ``run(held)`` for each submitted job."""

    def __init__(self, size: int, run: Callable[[Held], None]) -> None:
        self.run = run
        self.inbox: queue.SimpleQueue[Held | None] = queue.SimpleQueue()
        self.threads = [self._thread() for _ in range(size)]
        self._lock = threading.Lock()
        # Jobs whose handler was abandoned: their thread retires when it returns.
        self._abandoned: set[Held] = set()

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def replace_stuck(self, held: Held) -> None:
        """``held``'s handler ignored its timeout and was abandoned, but its thread
        cannot be stopped: start a replacement so the pool keeps its size; the
        stuck thread retires when the handler finally returns."""
        with self._lock:
            self._abandoned.add(held)
            thread = self._thread()
            self.threads.append(thread)
        thread.start()

    def _thread(self) -> threading.Thread:
        name = f"dispatch-executor-{len(getattr(self, 'threads', []))}"
        return threading.Thread(target=self._loop, name=name, daemon=True)

    def _retire(self, held: Held) -> bool:
        with self._lock:
            if held not in self._abandoned:
                return False
            self._abandoned.discard(held)
            return True

    def submit(self, held: Held) -> None:
        self.inbox.put(held)

    def waiting(self) -> int:
        """Submitted jobs no thread has taken yet (claimed, prefetched)."""
        return self.inbox.qsize()

    def stop(self, timeout: float) -> None:
        """Let each thread finish its job, close its connection and exit. Handlers
        still running ``timeout`` seconds from now are left behind (daemon threads)."""
        with self._lock:
            threads = list(self.threads)
        for _ in threads:
            self.inbox.put(None)
        end = time.monotonic() + timeout
        for thread in threads:
            thread.join(max(end - time.monotonic(), 0.0))

    def _loop(self) -> None:
        try:
            while (held := self.inbox.get()) is not None:
                self.run(held)
                _drop_broken_connections()
                if self._retire(held):
                    return
        finally:
            # This thread's connection ends with the thread, not with each job.
            connections.close_all()


def _drop_broken_connections() -> None:
    """A handler may leave its connection broken (or in manual-commit mode); the
    next job on this thread must start from a usable one, reconnected on demand."""
    for connection in connections.all(initialized_only=True):
        connection.close_if_unusable_or_obsolete()
