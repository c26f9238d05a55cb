"""The Django admin as the job engine's operations console (docs/admin.md).

Importing this package (Django's admin autodiscovery does) registers the job,
queue, worker and usage admins. One module per noun: ``jobs`` (the job list and
detail), ``paging`` (keyset pagination), ``filters``, ``actions``, ``queues``,
``workers``, ``schedules``, ``deadletter``, ``usage``, ``values`` (showing data), ``safety``
(statement timeouts), ``readonly`` (the read-only and overview admin bases),
``params`` (query values refused at the boundary), ``search`` (the search box's
JSON), ``display`` (the one date and duration format), ``dashboard`` (the app
index's overview) and ``charts`` (its inline SVG).
"""

from . import jobs, queues, schedules, usage, workers

__all__ = ["jobs", "queues", "schedules", "usage", "workers"]
