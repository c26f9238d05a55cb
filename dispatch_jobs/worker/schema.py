"""Is the job database migrated? Asked once, before a worker starts: without its
tables a worker would retry "no such table" forever instead of saying what to do."""

from __future__ import annotations

from django.db import connections
from django.db.migrations.executor import MigrationExecutor


def unapplied_migrations(alias: str) -> list[str]:
    """dispatch_jobs migrations not yet applied to ``alias``, as ``app.name``."""
    executor = MigrationExecutor(connections[alias])
    targets = [key for key in executor.loader.graph.leaf_nodes() if key[0] == "dispatch_jobs"]
    plan = executor.migration_plan(targets)
    return [f"{migration.app_label}.{migration.name}" for migration, _ in plan]
