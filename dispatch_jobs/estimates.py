"""The usage-driven estimator: the seed's "configured estimator" that may raise a
task's declared resource floor from what its attempts were measured to use.

Per task name and log2 input-size bucket (``bucket_of``), once at least
``SAMPLES_MIN`` usage rows of one executor rung are recorded: the p95 of their
peak RSS (memory) and of their CPU use (cpu time / wall time, in millicores),
times ``HEADROOM``, clamped to [the declared floor, the largest live worker's
capacity] (and never past the task's declared limit). Rungs are never pooled:
measurements under different isolation are different measurements; the rung
with the most samples in the bucket speaks. A rung that cannot measure a
quantity (the in-process rung has no separable RSS: its rows say 0) gives no
estimate of it.

Opt-in per task (``@task(estimate=True)``) or for every task
(``DISPATCH_JOBS["ESTIMATE_RESOURCES"]``; ``estimate=False`` opts a task out).
Applied once, at enqueue, in the enqueuing process, between the task's
``resource_func`` and the per-enqueue ``using(resources=...)`` override (which
still wins); never on the claim path, which reads only the row's columns.
docs/how-to/estimates.md.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta

from .conf import settings
from .resources import ResourceSet

SAMPLES_MIN = 20
HEADROOM = 1.2
PERCENTILE = 0.95
# The most recent rows of a (task, bucket) read per estimate: a bounded read
# (the usage name index), and a window that follows a task whose needs change.
SAMPLES_READ = 500


@dataclass(frozen=True, slots=True)
class Sample:
    """One attempt's measurements, as the estimator reads them."""

    executor: str
    peak_rss: int
    cpu_time: timedelta | None
    wall_time: timedelta


@dataclass(frozen=True, slots=True)
class Estimate:
    """What the samples of one (task, bucket) say: ``memory`` in bytes and
    ``cpu`` in millicores (``None``: not enough measured samples of it), from
    ``samples`` rows of ``executor``."""

    executor: str
    samples: int
    memory: int | None
    cpu: int | None

    def as_resources(self) -> ResourceSet:
        found = {"memory": self.memory, "cpu": self.cpu}
        return {key: value for key, value in found.items() if value is not None}


def bucket_of(input_bytes: int) -> int:
    """The log2 size bucket: 0 for no input, else ``b`` for sizes in
    [2**(b-1), 2**b) (1 byte is bucket 1, 1 KiB bucket 11, 1 MiB bucket 21)."""
    return max(int(input_bytes), 0).bit_length()


def bucket_range(bucket: int) -> tuple[int, int]:
    """The sizes of ``bucket``, as [low, high)."""
    if bucket <= 0:
        return 0, 1
    return 2 ** (bucket - 1), 2**bucket


def percentile(values: Sequence[float], fraction: float = PERCENTILE) -> float:
    """Nearest-rank percentile of a non-empty sequence (any order)."""
    ordered = sorted(values)
    rank = max(1, math.ceil(len(ordered) * fraction))
    return ordered[min(rank, len(ordered)) - 1]


def estimate_from(samples: Iterable[Sample]) -> Estimate | None:
    """The estimate of one (task, bucket)'s samples, or ``None`` below the
    threshold. The rung with the most samples speaks (ties: by name)."""
    by_rung: dict[str, list[Sample]] = {}
    for sample in samples:
        by_rung.setdefault(sample.executor, []).append(sample)
    if not by_rung:
        return None
    executor = min(by_rung, key=lambda rung: (-len(by_rung[rung]), rung))
    rows = by_rung[executor]
    if len(rows) < SAMPLES_MIN:
        return None
    rss = [s.peak_rss for s in rows if s.peak_rss > 0]
    cores = [
        s.cpu_time / s.wall_time
        for s in rows
        if s.cpu_time is not None and s.wall_time > timedelta(0)
    ]
    return Estimate(
        executor=executor,
        samples=len(rows),
        memory=math.ceil(percentile(rss) * HEADROOM) if len(rss) >= SAMPLES_MIN else None,
        cpu=math.ceil(percentile(cores) * 1000 * HEADROOM) if len(cores) >= SAMPLES_MIN else None,
    )


def estimate_for(name: str, input_bytes: int) -> Estimate | None:
    """The estimate of task ``name`` at ``input_bytes`` from its recorded usage."""
    from . import store

    low, high = bucket_range(bucket_of(input_bytes))
    rows = store.usage_samples(name, low, high, SAMPLES_READ)
    return estimate_from(Sample(*row) for row in rows)


def wants_estimate(task: object) -> bool:
    """The task's ``estimate`` when it says, else the setting."""
    own = getattr(task, "estimate", None)
    return settings.estimate_resources if own is None else bool(own)


def clamp(
    estimate: ResourceSet,
    floor: Mapping[str, int],
    declared_limits: Mapping[str, int],
    capacities: Sequence[Mapping[str, int]],
) -> ResourceSet:
    """The keys the estimate raises: each at most the largest live capacity of it
    (when some worker declares one) and the task's declared limit, and at least
    the declared floor. A key it does not raise is left out."""
    raised: dict[str, int] = {}
    for key, amount in estimate.items():
        tops = [c[key] for c in capacities if key in c]
        if tops:
            amount = min(amount, max(tops))
        if key in declared_limits:
            amount = min(amount, declared_limits[key])
        if amount > floor.get(key, 0):
            raised[key] = amount
    return raised
