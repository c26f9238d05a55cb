"""The Django admin as the job engine's operations console (docs/admin.md).

Importing this package (Django's admin autodiscovery does) registers the job,
queue, worker and usage admins. One module per noun: ``jobs`` (the job list and
detail), ``paging`` (keyset pagination), ``filters``, ``actions``, ``queues``,
``workers``, ``deadletter``, ``usage``, ``values`` (showing data), ``safety``
(statement timeouts) and ``readonly`` (the read-only and overview admin bases).
"""

from . import jobs, queues, usage, workers

__all__ = ["jobs", "queues", "usage", "workers"]
