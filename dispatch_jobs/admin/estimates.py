"""The usage summary's estimates: per task and log2 input-size bucket, what the
task declares beside what the estimator (``dispatch_jobs.estimates``) would say
from the window's records. Read from the same bounded scan as the summary (the
window's newest ``ADMIN_SCAN_CAP`` records), so it shows what the window holds;
the estimate an enqueue applies reads the newest ``SAMPLES_READ`` records of its
bucket whatever their age, and clamps to live capacity, so the two may differ.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from .. import database, estimates, names
from ..exceptions import TaskNotFound
from ..store import reads


@dataclass(frozen=True)
class BucketEstimate:
    name: str
    bucket: int
    samples: int
    declared_memory: int | None  # None: the task cannot be loaded
    declared_cpu: int | None
    estimate: estimates.Estimate | None
    opted_in: bool

    @property
    def sizes(self) -> str:
        low, high = estimates.bucket_range(self.bucket)
        return "no input" if self.bucket == 0 else f"{_bytes(low)} – {_bytes(high)}"

    @property
    def estimated_memory(self) -> str:
        memory = self.estimate.memory if self.estimate else None
        return _bytes(memory) if memory is not None else "—"

    @property
    def estimated_cpu(self) -> str:
        cpu = self.estimate.cpu if self.estimate else None
        return f"{cpu}m" if cpu is not None else "—"

    @property
    def declared(self) -> str:
        if self.declared_memory is None:
            return "(task not importable)"
        parts = [f"memory {_bytes(self.declared_memory)}" if self.declared_memory else ""]
        parts.append(f"cpu {self.declared_cpu}m" if self.declared_cpu else "")
        return ", ".join(p for p in parts if p) or "nothing"


def estimate_summary(window: timedelta, scan_cap: int) -> list[BucketEstimate]:
    """Per (task, bucket) of the window's newest ``scan_cap`` records."""
    rows = (
        reads.usage()
        .filter(recorded_at__gte=database.now_minus(window))
        .order_by("-recorded_at")
        .values_list("name", "input_bytes", "executor", "peak_rss", "cpu_time", "wall_time")[
            :scan_cap
        ]
    )
    buckets: dict[tuple[str, int], list[estimates.Sample]] = {}
    for name, input_bytes, executor, rss, cpu, wall in rows:
        key = (name, estimates.bucket_of(input_bytes))
        buckets.setdefault(key, []).append(estimates.Sample(executor, rss, cpu, wall))
    found = []
    for (name, bucket), samples in sorted(buckets.items()):
        memory, millicores, opted = _declared(name)
        found.append(
            BucketEstimate(
                name,
                bucket,
                len(samples),
                memory,
                millicores,
                estimates.estimate_from(samples),
                opted,
            )
        )
    return found


def _declared(name: str) -> tuple[int | None, int | None, bool]:
    try:
        task = names.load_task(name)
    except TaskNotFound:
        return None, None, False
    resources = getattr(task, "resources", None) or {}
    return resources.get("memory", 0), resources.get("cpu", 0), estimates.wants_estimate(task)


def _bytes(amount: int) -> str:
    for unit, size in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if amount >= size:
            return f"{amount / size:.1f} {unit}"
    return f"{amount} B"
