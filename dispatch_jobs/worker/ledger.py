"""The worker's capacity ledger: what a claim may offer, and admission.

A worker with a ``--budget`` offers each claim its configured capacity minus what
its held jobs hold (``Inflight.in_use``: every claimed job until its handler
returns), and claims one job at a time, so the claim's own fit test keeps the
standard keys (cpu, memory, disk, gpu) exact.

Custom keys are matched by presence in the claim (the seed: a quantity match
would need a document comparison or a join table in every backend); a key is
offered while at least one unit is free. Their quantity is enforced here, after
the claim, as the seed asks: a claimed job starts only once the custom units it
needs are free beside the jobs already admitted. Meanwhile it holds its units in
the offer, so nothing else needing that key is claimed. A job needing more of a
key than this worker has at all is handed back at once for a worker that has it,
and this worker's claims skip it from then on (``unfit``).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Mapping

from ..resources import STANDARD_KEYS
from .decode import quantities
from .inflight import Held

# How often a job waiting for its custom units looks at its cancellation.
WAIT_SECONDS = 0.1
# How many handed-back job ids a worker's claims skip (the oldest are forgotten).
UNFIT_REMEMBERED = 100


def custom_needs(resources: object) -> dict[str, int]:
    return {k: v for k, v in quantities(resources).items() if k not in STANDARD_KEYS and v}


class Ledger:
    """Admission of claimed jobs against the custom-key quantities of ``capacity``."""

    def __init__(self, capacity: Mapping[str, int]) -> None:
        self.capacity = {k: v for k, v in capacity.items() if k not in STANDARD_KEYS}
        self._admitted: dict[Held, dict[str, int]] = {}
        self._changed = threading.Condition()
        self.unfit: deque[int] = deque(maxlen=UNFIT_REMEMBERED)

    def fits_at_all(self, held: Held) -> bool:
        """Whether this worker could ever run the job (its custom needs within the
        capacity); a worker without a budget runs anything. One that cannot is
        remembered, so the next claims skip it."""
        if not self.capacity:
            return True
        need = custom_needs(held.job.resources)
        if all(amount <= self.capacity.get(key, 0) for key, amount in need.items()):
            return True
        self.unfit.append(held.job.pk)
        return False

    def admit(self, held: Held) -> None:
        """Wait until the job's custom units are free beside the admitted jobs, then
        hold them. Returns early once the job is cancelled (its executor decides).
        Without custom capacity there is nothing to hold, nor to wait for."""
        if not self.capacity:
            return
        need = custom_needs(held.job.resources)
        with self._changed:
            while need and not self._free_for(need):
                if held.cancellation.is_set():
                    return
                self._changed.wait(WAIT_SECONDS)
            self._admitted[held] = need

    def release(self, held: Held) -> None:
        if not self.capacity:
            return  # nothing was admitted (see admit)
        with self._changed:
            if self._admitted.pop(held, None):
                self._changed.notify_all()

    def _free_for(self, need: Mapping[str, int]) -> bool:
        for key, amount in need.items():
            used = sum(held_need.get(key, 0) for held_need in self._admitted.values())
            if used + amount > self.capacity.get(key, 0):
                return False
        return True
