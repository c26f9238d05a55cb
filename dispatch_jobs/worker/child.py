"""A child process of the subprocess rung: runs one job at a time for its worker.

Started by ``worker.children`` (``main`` with the two pipe descriptors it reads
jobs from and writes outcomes to). Django is
set up once; then each job is run by the same ``executor.execute`` the
in-process rung uses, so outcomes mean the same (return value, exception class,
traceback, ``Permanent``), and measured from inside: CPU time (this process's
rusage, user + system, before and after), peak RSS (the high-water mark, reset
before the job), bytes written to storage (``/proc/self/io``).

A job's memory limit is enforced with ``RLIMIT_AS``: the address space may grow
by at most the limit while the handler runs, so an allocation past it fails with
``MemoryError``, recorded as ``JobOutOfMemory``; the child is then replaced.

The child ignores SIGINT (a Ctrl-C of the worker's terminal is the worker's to
handle), and exits when its worker goes away (the pipe closes, or the parent
process changes).
"""

from __future__ import annotations

import os
import resource
import signal
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from . import frames

OOM_CLASS = "dispatch_jobs.exceptions.JobOutOfMemory"
# How often the watchdog checks that the worker is still there.
ORPHAN_CHECK_SECONDS = 1.0


def main(argv: list[str]) -> int:
    """Serve jobs until the worker closes the pipe (Django is already set up)."""
    reader, writer = int(argv[1]), int(argv[2])
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if len(argv) > 3 and argv[3]:
        from .verbosity import configure_logging

        configure_logging(int(argv[3]))  # the worker's own -v
    _watch_parent(os.getppid())
    try:
        # The CPU time spent so far: where the worker starts counting if it has to
        # kill this child under a job (then only the kernel's totals are left).
        frames.send(writer, ("ready", cpu_seconds()))
        while True:
            kind, payload = frames.receive(reader)
            if kind == "run":
                frames.send(writer, ("done", _run(payload)))
    except (EOFError, BrokenPipeError):
        return 0  # the worker closed the pipe: it is done with this child


@dataclass(frozen=True)
class Request:
    """What the worker sends for one job: the claimed row (read only) and the
    memory limit to enforce (bytes; 0: none)."""

    job: Any
    worker_id: str
    memory_limit: int
    # The job's inputs, staged and pinned by the worker (``staging``) for the
    # child's handler: the cache and its single flight stay the worker's.
    inputs: dict[str, Any] = field(default_factory=dict)


@dataclass
class Done:
    """What the child sends back: the outcome and verdict ``execute`` produced
    (already measured), the child's resident size now, and whether it must be
    replaced (it ran out of memory)."""

    outcome: Any
    verdict: Any
    rss: int
    cpu_total: float  # this child's CPU time so far
    spent: bool = False


def _run(request: Request) -> Done:
    from django.db import connections

    from ..names import load_task
    from ..rungs import SUBPROCESS
    from .context import Cancellation
    from .executor import deadline_for, execute
    from .outcomes import settle

    meter = Meter()
    job = request.job
    with memory_limit(request.memory_limit):
        attempt = execute(
            job, request.worker_id, Cancellation(), deadline_for(job), staged=request.inputs
        )
    outcome = attempt.outcome
    outcome.executor = SUBPROCESS
    outcome.cpu_time, outcome.peak_rss, outcome.disk_written = meter.measure()
    verdict = attempt.verdict
    out_of_memory = outcome.exception_class == "builtins.MemoryError"
    if out_of_memory and request.memory_limit:
        outcome.exception_class = OOM_CLASS
        outcome.message = (
            f"out of memory: the job's memory limit is {request.memory_limit} bytes "
            f"(RLIMIT_AS); {outcome.message}".rstrip("; ")
        )
        try:
            task = load_task(job.name)
        except Exception:  # noqa: BLE001 - the verdict then takes the worker's backoff
            task = None
        verdict = settle(job, outcome, request.worker_id, task)
    for connection in connections.all(initialized_only=True):
        connection.close_if_unusable_or_obsolete()
    return Done(outcome, verdict, resident_bytes(), cpu_seconds(), spent=out_of_memory)


class memory_limit:
    """``RLIMIT_AS`` while a handler runs: the address space may grow by at most
    ``limit`` bytes (the child's own Python and Django are already mapped). Only
    the soft limit is changed, so it can be lifted again for the next job."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.previous: tuple[int, int] | None = None

    def __enter__(self) -> None:
        if self.limit <= 0:
            return
        self.previous = resource.getrlimit(resource.RLIMIT_AS)
        ceiling = _status_bytes("VmSize") + self.limit
        hard = self.previous[1]
        if hard != resource.RLIM_INFINITY:
            ceiling = min(ceiling, hard)
        resource.setrlimit(resource.RLIMIT_AS, (ceiling, hard))

    def __exit__(self, *exc: object) -> None:
        if self.previous is not None:
            resource.setrlimit(resource.RLIMIT_AS, self.previous)


class Meter:
    """One job's CPU time, peak RSS and storage writes, measured as deltas: the
    child is reused, so its totals include earlier jobs."""

    def __init__(self) -> None:
        # The high-water mark restarts from the current RSS (Linux >= 4.0); where
        # that is refused, the peak is the child's whole life's.
        try:
            with open("/proc/self/clear_refs", "w") as handle:
                handle.write("5")
        except OSError:
            pass
        self.cpu_before = cpu_seconds()
        self.written_before = written_bytes()

    def measure(self) -> tuple[float, int, int]:
        cpu = max(cpu_seconds() - self.cpu_before, 0.0)
        peak = _status_bytes("VmHWM") or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        return cpu, peak, max(written_bytes() - self.written_before, 0)


def cpu_seconds(usage: Any = None) -> float:
    usage = usage or resource.getrusage(resource.RUSAGE_SELF)
    return float(usage.ru_utime + usage.ru_stime)


def written_bytes() -> int:
    """Bytes this process caused to be written to storage (0 where unreadable)."""
    try:
        with open("/proc/self/io") as handle:
            for line in handle:
                if line.startswith("write_bytes:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def resident_bytes() -> int:
    return _status_bytes("VmRSS")


def _status_bytes(field: str) -> int:
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024  # kB
    except OSError:
        pass
    return 0


def _watch_parent(parent: int) -> None:
    """Exit when the worker is gone: a child must not outlive it running a job
    nobody will record (the job comes back through its lapsed lease)."""

    def watch() -> None:
        while True:
            time.sleep(ORPHAN_CHECK_SECONDS)
            if os.getppid() != parent:
                os._exit(70)

    threading.Thread(target=watch, name="dispatch-child-watchdog", daemon=True).start()
