"""What a running handler can observe: its cancellation and its deadline.

A handler declared with ``takes_context=True`` receives a :class:`JobContext` (a
``django.tasks.TaskContext`` with more to it); any handler can reach the same
object through :func:`current_job`. In-process execution cannot stop a thread, so
cancellation is cooperative: long handlers should call ``context.check()`` (or
``context.sleep()``) between units of work.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..compat import TaskContext
from ..exceptions import JobCancelled, JobTimedOut

if TYPE_CHECKING:
    from .staging import StagedInput

# Why a job was cancelled; set once, first reason wins.
LEASE_LOST = "lease lost"
HANDED_BACK = "handed back (worker draining)"
TIMED_OUT = "timed out"
# An operator asked for the job to stop: the job ends cancelled, never to rerun.
STOP_REQUESTED = "cancelled by an operator"


class Cancellation:
    """A one-shot, thread-safe cancellation signal with a reason. Every held job
    has one and nearly none is ever waited on, so the event a waiter needs is
    made by the first ``wait`` (an ``Event`` costs a condition and two locks)."""

    __slots__ = ("_event", "_lock", "_set", "by", "reason")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._event: threading.Event | None = None
        self._set = False
        self.reason = ""
        self.by = ""  # who asked, for STOP_REQUESTED

    def cancel(self, reason: str, by: str = "") -> None:
        with self._lock:
            if self._set:
                return
            self.reason = reason
            self.by = by
            self._set = True
            event = self._event
        if event is not None:
            event.set()

    @property
    def why(self) -> str:
        """The reason, naming who asked for a stop: "cancelled by an operator (ops)"."""
        return f"{self.reason} ({self.by})" if self.stop_requested and self.by else self.reason

    @property
    def stop_requested(self) -> bool:
        return self._set and self.reason == STOP_REQUESTED

    def is_set(self) -> bool:
        return self._set

    def wait(self, seconds: float) -> bool:
        """Block until cancelled or ``seconds`` pass; True when cancelled."""
        with self._lock:
            if self._set:
                return True
            if self._event is None:
                self._event = threading.Event()
            event = self._event
        return event.wait(max(0.0, seconds))


@dataclass(frozen=True, slots=True, kw_only=True)
class JobContext(TaskContext):  # type: ignore[misc]  # frozen at runtime
    """The context of one attempt: Django's ``TaskContext`` plus the job's id,
    its deadline (``time.monotonic()`` seconds, or ``None``), its cancellation and
    its staged ``inputs`` (``context.inputs["video"].path``: a local file,
    docs/how-to/inputs.md)."""

    job_id: int
    deadline: float | None = None
    cancellation: Cancellation = field(default_factory=Cancellation)
    inputs: Mapping[str, StagedInput] = field(default_factory=dict)

    @property
    def timed_out(self) -> bool:
        return past(self.deadline)

    @property
    def cancelled(self) -> bool:
        """True once the job must stop: cancelled, or past its deadline."""
        return self.cancellation.is_set() or self.timed_out

    def remaining(self) -> float | None:
        """Seconds left before the deadline (never negative), or None."""
        if self.deadline is None:
            return None
        return max(0.0, self.deadline - time.monotonic())

    def check(self) -> None:
        """Raise ``JobTimedOut`` or ``JobCancelled`` if the job must stop."""
        if self.timed_out:
            raise JobTimedOut(f"Job {self.job_id} ran past its timeout.")
        if self.cancellation.is_set():
            raise JobCancelled(f"Job {self.job_id} was cancelled: {self.cancellation.why}.")

    def sleep(self, seconds: float) -> None:
        """Sleep, waking early (and raising) when cancelled or past the deadline."""
        end = time.monotonic() + seconds
        while True:
            self.check()
            left = end - time.monotonic()
            if left <= 0:
                return
            remaining = self.remaining()
            # Wake just after the deadline so check() sees it and raises.
            self.cancellation.wait(left if remaining is None else min(left, remaining + 0.001))


def past(deadline: float | None) -> bool:
    """Whether a deadline (``time.monotonic()`` seconds, or None) has passed."""
    return deadline is not None and time.monotonic() >= deadline


class ContextSlot:
    """One attempt's context, built on first use.

    The executor knows the job's cancellation and deadline from the start, but
    the ``TaskResult`` inside a :class:`JobContext` costs more to build than a
    no-op job takes to run, and most handlers never ask for it. The slot builds
    the context when a ``takes_context`` handler is called, a ``task_started``
    receiver listens, or the handler calls :func:`current_job`; at most once.
    """

    __slots__ = ("_build", "_built", "cancellation", "deadline")

    def __init__(
        self, build: Callable[[], JobContext], cancellation: Cancellation, deadline: float | None
    ) -> None:
        self._build = build
        self._built: JobContext | None = None
        self.cancellation = cancellation
        self.deadline = deadline

    @property
    def timed_out(self) -> bool:
        return past(self.deadline)

    def get(self) -> JobContext:
        if self._built is None:
            self._built = self._build()
        return self._built


_current: ContextVar[ContextSlot | None] = ContextVar("dispatch_jobs_job", default=None)


def current_job() -> JobContext | None:
    """The context of the job running in this thread, or None outside a job."""
    slot = _current.get()
    return None if slot is None else slot.get()


def set_current_job(slot: ContextSlot | None) -> object:
    return _current.set(slot)


def reset_current_job(token: object) -> None:
    _current.reset(token)  # type: ignore[arg-type]
