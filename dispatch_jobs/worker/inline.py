"""Run ready jobs in the calling thread: for tests and one-off scripts.

``drain()`` goes through the real pipeline (claim with a lease, the executor, the
fenced completion and usage), one job at a time, without threads. A job whose
retry is scheduled in the future is not ready, so draining always ends.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Sequence

from .. import store
from ..conf import settings
from ..store import reads
from .completer import persist
from .context import Cancellation
from .executor import deadline_for, execute


def drain(queues: Sequence[str] | None = None, max_jobs: int | None = None) -> int:
    """Claim and run ready jobs until none is ready (or ``max_jobs`` have run).

    ``queues``: the queues to drain; ``None`` means every queue that has ready
    jobs. Returns how many jobs ran (whatever their outcome).
    """
    worker_id = f"inline-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    ran = 0
    while max_jobs is None or ran < max_jobs:
        names = list(queues) if queues is not None else _ready_queues()
        claimed = store.claim_jobs(
            store.ClaimOptions(
                queues=names, limit=1, worker_id=worker_id, lease_ttl=settings.lease_ttl
            )
        )
        if not claimed:
            return ran
        job = claimed[0]
        persist([execute(job, worker_id, Cancellation(), deadline_for(job))], worker_id)
        ran += 1
    return ran


def _ready_queues() -> list[str]:
    return sorted(set(reads.jobs().ready().values_list("queue", flat=True).distinct()))
