"""The capacity ledger, with a real ``runjobs --budget`` worker: many claims of
mixed sizes never hold more than the budget at once, custom-key quantities
included (the claim matches those by presence; the ledger admits by quantity),
and a job needing more than the worker has is handed back, never run."""

from __future__ import annotations

from pathlib import Path

import pytest

from dispatch_jobs.models import Job, JobState
from dispatch_jobs.resources import parse_resources
from tests.jobs import tasks
from tests.worker.processes import FAST, wait_until
from tests.worker.support import enqueue

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

BUDGET = "cpu=2,memory=1Gi,fpga=3"
SIZES = [
    {"cpu": "500m"},
    {"cpu": 1, "memory": "512Mi"},
    {"memory": "256Mi", "fpga": 2},
    {"fpga": 1},
    {"cpu": 2},
    {"fpga": 3, "cpu": "250m"},
    {"memory": "1Gi"},
    {},
]


def spans(directory: Path) -> dict[int, tuple[float, float]]:
    found = {}
    for line in (directory / "spans").read_text().splitlines():
        job_id, start, end = line.split()
        found[int(job_id)] = (float(start), float(end))
    return found


def test_mixed_sizes_never_overcommit_the_budget(workers, tmp_path: Path) -> None:
    jobs = [
        enqueue(tasks.ledger_hold, str(tmp_path), 0.15, resources=parse_resources(size))
        for _ in range(4)
        for size in SIZES
    ]
    too_big = enqueue(tasks.ledger_hold, str(tmp_path), 0.0, resources=parse_resources({"fpga": 5}))
    workers("--budget", BUDGET, "--concurrency", "8", *FAST)
    wait_until(
        lambda: (
            Job.objects.filter(pk__in=[j.pk for j in jobs], state=JobState.COMPLETED).count()
            == len(jobs)
        ),
        what="every job completed",
    )
    ran = spans(tmp_path)
    assert sorted(ran) == sorted(j.pk for j in jobs)  # each once; the too-big one never
    needs = {j.pk: j.resources for j in jobs}
    capacity = parse_resources({"cpu": 2, "memory": "1Gi", "fpga": 3})
    overlapped = 0
    for start, _ in ran.values():
        # Everything running at the instant this job started, itself included.
        running = [other for other, (s, e) in ran.items() if s <= start < e]
        overlapped = max(overlapped, len(running))
        for key, limit in capacity.items():
            held = sum(needs[other].get(key, 0) for other in running)
            assert held <= limit, (key, held, limit, running)
    assert overlapped > 1, "the worker ran jobs side by side"
    # Handed back once (an eviction, never a retry); this worker never claims it again.
    row = Job.objects.get(pk=too_big.pk)
    assert (row.state, row.evict_count, row.retry_count) == (JobState.PENDING, 1, 0)
