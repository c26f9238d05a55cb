"""The jobs a worker holds right now: what the heartbeat renews, what slots count,
and what a drain hands back.

Each entry is claimed, then running, then either finished (its attempt handed to
the completer) or dropped (lease lost, handed back, abandoned). ``finish`` and
``drop`` race by design (a heartbeat may learn the lease is lost just as the
handler returns); whichever comes first under the entry's lock wins, so an
outcome is never both written and discarded.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta

from ..models import Job
from ..resources import STANDARD_KEYS
from .context import Cancellation
from .decode import quantities


@dataclass(eq=False)
class Held:
    """One held job: the claimed row (never changed: outcomes are values), its
    fence epoch, its renewal TTL, its cancellation and deadline."""

    job: Job
    epoch: int
    ttl: timedelta
    deadline: float | None = None  # set when the handler starts
    cancellation: Cancellation = field(default_factory=Cancellation)
    started: bool = False  # an executor thread took it (else it waits, prefetched)
    # Run in a child the executor thread supervises (the subprocess rung): that
    # thread enforces the deadline, so the heartbeat never abandons it.
    isolated: bool = False
    _state: str = "running"  # running → finished | dropped
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> bool:
        """Claim the right to run the handler. False once dropped (the lease was
        lost, or a drain handed the job back while it waited for a thread)."""
        with self._lock:
            if self._state != "running":
                return False
            self.started = True
            return True

    def finish(self) -> bool:
        """Claim the right to submit this job's outcome. False once dropped."""
        return self._settle("finished")

    def drop(self) -> bool:
        """Give the job up: its outcome, whenever it comes, is discarded."""
        return self._settle("dropped")

    def _settle(self, state: str) -> bool:
        with self._lock:
            if self._state != "running":
                return False
            self._state = state
            return True

    @property
    def is_running(self) -> bool:
        return self._state == "running"


class Inflight:
    """Thread-safe registry of held jobs, keyed by job id."""

    def __init__(self) -> None:
        self._held: dict[int, Held] = {}
        self._lock = threading.Lock()
        self.emptied = threading.Condition(self._lock)

    def add(self, held: Held) -> None:
        with self._lock:
            self._held[held.job.pk] = held

    def remove(self, held: Held) -> None:
        with self._lock:
            if self._held.get(held.job.pk) is held:
                del self._held[held.job.pk]
            if not self._held:
                self.emptied.notify_all()

    def settle(self, done: Iterable[tuple[int, int]]) -> None:
        """Remove the held jobs of ``done`` (job id, lease epoch) still held under
        that epoch, under one lock (a batch the completer wrote)."""
        with self._lock:
            for job_id, epoch in done:
                held = self._held.get(job_id)
                if held is not None and held.epoch == epoch:
                    del self._held[job_id]
            if not self._held:
                self.emptied.notify_all()

    def get(self, job_id: int) -> Held | None:
        with self._lock:
            return self._held.get(job_id)

    def __len__(self) -> int:
        with self._lock:
            return len(self._held)

    def __iter__(self) -> Iterator[Held]:
        with self._lock:
            return iter(list(self._held.values()))

    def wait_empty(self, timeout: float | None) -> bool:
        with self._lock:
            return self.emptied.wait_for(lambda: not self._held, timeout)

    def executing(self) -> int:
        """Held jobs whose handler is still running (not yet settled or dropped)."""
        return sum(1 for held in self if held.is_running)

    def busy(self) -> int:
        """Held jobs a drain waits for: started and unsettled, or settled and
        waiting for the completer. A prefetched job not yet started is not busy:
        a drain hands it back instead of starting it."""
        return sum(1 for held in self if held.started or not held.is_running)

    def in_use(self) -> dict[str, int]:
        """Resources held by running jobs, in canonical units (custom keys by count)."""
        used: dict[str, int] = {}
        for held in self:
            if not held.is_running:
                continue
            for key, amount in quantities(held.job.resources).items():
                used[key] = used.get(key, 0) + amount
        return used


def free_budget(budget: dict[str, int], used: dict[str, int]) -> tuple[dict[str, int], list[str]]:
    """What is left to offer a claim: the budget minus what held jobs use, and the
    custom keys with a unit still free. An exhausted custom key stays in the budget
    at 0 so the claim stays bounded (the claim matches custom keys by presence)."""
    free = {key: max(amount - used.get(key, 0), 0) for key, amount in budget.items()}
    offered = sorted(key for key, left in free.items() if key not in STANDARD_KEYS and left > 0)
    return free, offered
