"""The subprocess rung's executor: run one held job in a child and supervise it.

The executor thread hands the claimed job to a child (``children``) and waits
for its outcome, watching three things meanwhile:

- the job's deadline: past it, the child is killed (SIGTERM, then SIGKILL after
  ``child_kill_grace``) and the attempt is a timeout;
- the job's cancellation: an operator's cancel kills the child and the job ends
  cancelled; a lost lease or a drain's hand-back kills it and the outcome is
  discarded (the job is someone else's, or pending again);
- the child itself: if it dies (an exit, a signal, a segfault), the attempt
  fails with its exit status, and only this job is affected.

A child that answers sends the outcome ``executor.execute`` produced in it, so a
subprocess attempt settles exactly as an in-process one would.
"""

from __future__ import annotations

import contextlib
import logging
import time
from typing import Any

from django.utils import timezone

from ..exceptions import ChildUnavailable, StagingFailed
from ..models import Job
from ..names import load_task
from ..rungs import SUBPROCESS
from .child import Done, Request
from .children import Child, Children, Exit
from .context import STOP_REQUESTED, TIMED_OUT
from .decode import quantities
from .executor import Attempt, deadline_for
from .inflight import Held
from .outcomes import Kind, Outcome, settle
from .staging import ArtifactCache

logger = logging.getLogger("dispatch_jobs.worker")

# How often the supervising thread looks at the job's cancellation while it waits
# for the child (an outcome wakes it at once).
POLL_SECONDS = 0.05
_CLASSES = "dispatch_jobs.exceptions."


def memory_limit_of(job: Job) -> int:
    """The job's memory limit in bytes (0: none), from its resolved limits."""
    return quantities(job.resource_limits).get("memory", 0)


class Supervisor:
    """Runs held jobs in the pool's children, one per call, on executor threads."""

    def __init__(
        self, children: Children, worker_id: str, kill_grace: float, cache: ArtifactCache
    ) -> None:
        self.children = children
        self.cache = cache  # the worker's: inputs are staged here, pinned while the child runs
        self.worker_id = worker_id
        self.kill_grace = kill_grace

    def run(self, held: Held) -> Attempt:
        job = held.job
        started = _Started()
        if held.cancellation.stop_requested:
            # Cancelled by an operator before a thread took it: no child needed.
            outcome = started.outcome(Kind.STOPPED, "JobCancelled", "cancelled before it started")
            outcome.extra["by"] = held.cancellation.by
            return self._attempt(held, outcome)
        with contextlib.ExitStack() as pins:
            inputs = {}
            if job.artifact_bindings:
                try:
                    inputs = pins.enter_context(self.cache.staged(job.artifact_bindings))
                except StagingFailed as exc:
                    outcome = started.outcome(Kind.UNSTAGED, type(exc).__name__, str(exc))
                    return self._attempt(held, outcome)
            try:
                child = self.children.checkout()
            except ChildUnavailable as exc:
                outcome = started.outcome(Kind.ERROR, "ChildUnavailable", str(exc))
                return self._attempt(held, outcome)
            # The timeout counts from the handler's start: not the wait for a child to
            # set Django up (a new child may take seconds on a busy machine).
            held.deadline = deadline_for(job)
            request = Request(job, self.worker_id, memory_limit_of(job), inputs)
            try:
                child.send(("run", request))
            except OSError:
                return self._died(held, child, started, child.cpu)
            return self._watch(held, child, started)

    def _watch(self, held: Held, child: Child, started: _Started) -> Attempt:
        cpu_before = child.cpu
        while True:
            try:
                message = child.receive(self._wait(held))
            except EOFError:
                return self._died(held, child, started, cpu_before)
            except Exception as exc:  # noqa: BLE001 - an unreadable answer is this job's
                logger.warning("Job %s: unreadable answer from its child: %r", held.job.pk, exc)
                child.kill(self.kill_grace)
                return self._died(held, child, started, cpu_before)
            if message is not None:
                return self._answered(held, child, message[1])
            reason = held.cancellation.reason if held.cancellation.is_set() else ""
            if reason and reason != TIMED_OUT:
                return self._cancelled(held, child, started, cpu_before)
            if held.deadline is not None and time.monotonic() >= held.deadline:
                return self._timed_out(held, child, started, cpu_before)

    @staticmethod
    def _wait(held: Held) -> float:
        if held.deadline is None:
            return POLL_SECONDS
        return min(POLL_SECONDS, max(held.deadline - time.monotonic(), 0.0))

    def _answered(self, held: Held, child: Child, done: Done) -> Attempt:
        child.rss, child.cpu = done.rss, done.cpu_total
        self.children.checkin(child, replace=done.spent)
        return Attempt(held.job, held.epoch, done.outcome, done.verdict)

    def _died(self, held: Held, child: Child, started: _Started, cpu_before: float) -> Attempt:
        ended = child.reap()
        self.children.discard(child)
        how = ended.describe()
        message = f"the child process running the job {how}"
        if ended.signal == 9:
            message += " (SIGKILL from outside the worker: perhaps the kernel's OOM killer)"
        logger.warning("Job %s: %s.", held.job.pk, message)
        outcome = started.outcome(Kind.ERROR, "ChildDied", message, ended, cpu_before)
        outcome.extra["exit"] = how
        return self._attempt(held, outcome)

    def _timed_out(self, held: Held, child: Child, started: _Started, cpu_before: float) -> Attempt:
        ended = self._kill(child)
        timeout = held.job.timeout.total_seconds() if held.job.timeout else 0
        message = f"ran past its timeout of {timeout:g}s: the child process was stopped ({ended})"
        logger.warning("Job %s %s.", held.job.pk, message)
        outcome = started.outcome(Kind.TIMEOUT, "JobTimedOut", message, child.exit, cpu_before)
        return self._attempt(held, outcome)

    def _cancelled(self, held: Held, child: Child, started: _Started, cpu_before: float) -> Attempt:
        cancellation = held.cancellation
        ended = self._kill(child)
        if cancellation.reason == STOP_REQUESTED:
            message = f"cancelled while it ran: the child process was stopped ({ended})"
            outcome = started.outcome(Kind.STOPPED, "JobCancelled", message, child.exit, cpu_before)
            outcome.extra["by"] = cancellation.by
            return self._attempt(held, outcome)
        # The lease was lost or the job handed back: nothing of this attempt is written.
        outcome = started.outcome(Kind.CANCELLED, "JobCancelled", cancellation.reason)
        return Attempt(held.job, held.epoch, outcome, None)

    def _kill(self, child: Child) -> str:
        ended = child.kill(self.kill_grace)
        self.children.discard(child)
        return ended.describe()

    def _attempt(self, held: Held, outcome: Outcome) -> Attempt:
        job = held.job
        return Attempt(job, held.epoch, outcome, settle(job, outcome, self.worker_id, _task(job)))


def _task(job: Job) -> Any:
    """The job's task, for its retry backoff; None (the worker's) if it cannot load."""
    try:
        return load_task(job.name)
    except Exception:  # noqa: BLE001 - the outcome is recorded whatever the task is
        return None


class _Started:
    """When the attempt started, on both clocks; builds outcomes the worker
    records on the child's behalf (it was killed, or died)."""

    def __init__(self) -> None:
        self.at = timezone.now()
        self.clock = time.monotonic()

    def outcome(
        self,
        kind: Kind,
        exception: str,
        message: str,
        ended: Exit | None = None,
        cpu_before: float = 0.0,
    ) -> Outcome:
        outcome = Outcome(
            kind=kind,
            started_at=self.at,
            finished_at=timezone.now(),
            wall_time=time.monotonic() - self.clock,
            exception_class=_CLASSES + exception,
            message=message,
            executor=SUBPROCESS,
        )
        if ended is not None:
            # The child's whole life, minus what it had spent before this job; its
            # peak is the life's too (the best the kernel keeps after a death).
            outcome.cpu_time = max(ended.cpu_seconds - cpu_before, 0.0)
            outcome.peak_rss = ended.peak_rss
        return outcome
