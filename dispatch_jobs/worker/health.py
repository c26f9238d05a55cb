"""Claim health: whether this worker's claims keep failing, said where it is seen.

A claim that fails on a transient error is retried (``transient.retry_transient``)
with a warning each time. When claims keep failing the worker is alive but runs
nothing, so once they have failed for longer than one heartbeat the cause is
logged as an ERROR, again at least every ``ERROR_EVERY`` seconds while they still
fail, and the registry writes it to the worker's row at each heartbeat (the
admin's workers view shows the worker unhealthy). The next successful claim
clears it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import NamedTuple

logger = logging.getLogger("dispatch_jobs.worker")

# Under a minute, so that with retries every ≤ 2 s an operator sees an ERROR at
# least once a minute for as long as the claims fail.
ERROR_EVERY = 50.0


class ClaimFailure(NamedTuple):
    error: str  # the last failure, "ExceptionClass: message"
    failing_for: float  # seconds since the first failure of this run


class ClaimHealth:
    """Shared by the fetch loop (which reports) and the heartbeat (which reads)."""

    def __init__(self, grace: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.grace = grace
        self.clock = clock
        self._lock = threading.Lock()
        self._since: float | None = None
        self._error = ""
        self._logged_at: float | None = None

    def failed(self, exc: BaseException) -> None:
        now = self.clock()
        error = f"{type(exc).__name__}: {exc}".strip()
        with self._lock:
            if self._since is None:
                self._since = now
            self._error = error
            failing = now - self._since
            due = failing >= self.grace and (
                self._logged_at is None or now - self._logged_at >= ERROR_EVERY
            )
            if due:
                self._logged_at = now
        if due:
            logger.error(
                "Claims have been failing for %.0fs; this worker runs no job until they "
                "succeed: %s",
                failing,
                error,
            )

    def succeeded(self) -> None:
        with self._lock:
            if self._since is None:
                return
            failing, loud = self.clock() - self._since, self._logged_at is not None
            self._since, self._error, self._logged_at = None, "", None
        if loud:
            logger.warning("Claims succeed again, after failing for %.0fs.", failing)

    def failure(self) -> ClaimFailure | None:
        """The current run of failures, or None while claims succeed."""
        with self._lock:
            if self._since is None:
                return None
            return ClaimFailure(self._error, self.clock() - self._since)
