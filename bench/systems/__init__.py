"""One module per benchmarked system, each a ``System`` subclass.

``load(name, vendor)`` imports only the module asked for: each runs inside its
own virtual environment, where the other systems are not installed.
"""

from __future__ import annotations

import importlib

from .base import System

NAMES = ("dispatch_jobs", "django_tasks_db", "procrastinate", "pgqueuer")


def load(name: str, vendor: str) -> System:
    if name not in NAMES:
        raise ValueError(f"unknown system {name!r}; choose from {', '.join(NAMES)}")
    module = importlib.import_module(f"bench.systems.{name}")
    system: System = module.SYSTEM(vendor)
    return system
