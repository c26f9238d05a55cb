"""The measurements shared by every system: drain, latency, memory.

Throughput is read from the database side: the rate is (completed - 1) divided
by the span between the first and the last completion timestamp the system
itself recorded, so worker start-up and the harness's polling cadence are both
excluded. The harness only polls to know when to stop.
"""

from __future__ import annotations

import random
import statistics
import time

from .processes import WorkerProcess, wait_until
from .systems.base import System


class BenchError(RuntimeError):
    """A run that could not be measured (a worker died, jobs failed, a deadline)."""


def drain(system: System, jobs: int, mode: str, processes: int, cap: float) -> dict[str, float]:
    """Fill ``jobs`` no-op jobs, start ``processes`` workers in ``mode``, and
    measure until all are completed (or ``cap`` seconds pass)."""
    system.filled(jobs)
    workers = [system.start_worker(mode, f"drain-{mode}-{i}") for i in range(processes)]
    started = time.monotonic()
    try:
        done = _wait_for_completions(system, workers, jobs, cap)
    finally:
        for worker in workers:
            worker.stop()
    wall = time.monotonic() - started
    span = system.finish_span()
    if span is None or done < 2:
        raise BenchError(f"{system.name}: only {done} jobs completed\n{workers[0].tail()}")
    first, last = span
    rate = (done - 1) / max(last - first, 1e-6)
    return {
        "rate": rate,
        "completed": float(done),
        "complete": float(done >= jobs),
        "span_s": last - first,
        "wall_s": wall,
    }


def _wait_for_completions(
    system: System, workers: list[WorkerProcess], jobs: int, cap: float
) -> int:
    deadline = time.monotonic() + cap
    done = 0
    while time.monotonic() < deadline:
        done = system.finished()
        if done >= jobs:
            return done
        if system.failed():
            raise BenchError(f"{system.name}: jobs failed\n{workers[0].tail()}")
        if not any(worker.alive() for worker in workers):
            # Burst workers exit when the queue is empty; one last look.
            return system.finished()
        time.sleep(0.05)
    return done


def latency(system: System, samples: int, mode: str, max_gap: float = 0.3) -> dict[str, float]:
    """Enqueue-to-start latency on an idle worker: enqueue one job at a time,
    wait for it to finish, pause a random 0.1 s to ``max_gap`` s, repeat. The
    first job warms the worker up and is dropped. For a polling worker
    ``max_gap`` must exceed its poll interval, or every sample would land at
    the same phase of the poll cycle (just after the poll that ran the last
    job) and measure the whole interval instead of a random moment in it."""
    worker = system.start_worker(mode, f"latency-{mode}")
    try:
        system.enqueue_one()
        if not wait_until(lambda: system.finished() >= 1, timeout=60):
            raise BenchError(f"{system.name}: the warm-up job never ran\n{worker.tail()}")
        for i in range(samples):
            time.sleep(random.uniform(0.1, max_gap))
            system.enqueue_one()
            if not wait_until(lambda i=i: system.finished() >= i + 2, timeout=30, interval=0.005):
                raise BenchError(f"{system.name}: job {i} did not run in 30 s\n{worker.tail()}")
    finally:
        worker.stop()
    values = system.latencies()[1:]
    if len(values) < samples:
        raise BenchError(f"{system.name}: {len(values)} latencies recorded, {samples} expected")
    values_ms = sorted(v * 1000 for v in values)
    return {
        "p50_ms": statistics.median(values_ms),
        "p95_ms": _percentile(values_ms, 0.95),
        "samples": float(len(values_ms)),
    }


def memory(system: System, jobs: int, mode: str = "c32") -> dict[str, float]:
    """Peak resident memory of one worker (and its children) while it drains
    ``jobs`` no-op jobs at concurrency 32."""
    system.filled(jobs)
    worker = system.start_worker(mode, f"memory-{mode}")
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and system.finished() < jobs and worker.alive():
            worker.sample_rss()
            time.sleep(0.05)
        worker.sample_rss()
    finally:
        worker.stop()
    if worker.peak_rss == 0:
        raise BenchError(f"{system.name}: could not read the worker's memory\n{worker.tail()}")
    return {"peak_rss_mib": worker.peak_rss / 2**20, "completed": float(system.finished())}


def _percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    index = min(len(sorted_values) - 1, max(0, round(q * (len(sorted_values) - 1))))
    return sorted_values[index]


def timed_rate(count: int, action) -> float:  # type: ignore[no-untyped-def]
    """Jobs per second of ``action()`` enqueuing ``count`` jobs."""
    started = time.perf_counter()
    action()
    return count / (time.perf_counter() - started)
