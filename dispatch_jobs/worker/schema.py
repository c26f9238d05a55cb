"""Is the job database migrated? Asked once, before a worker starts: without its
tables a worker would retry "no such table" forever instead of saying what to do."""

from __future__ import annotations

from django.db import connections
from django.db.migrations.executor import MigrationExecutor

from .transient import TRANSIENT_ERRORS, reset_connection


def unapplied_migrations(alias: str) -> list[str] | None:
    """dispatch_jobs migrations not yet applied to ``alias``, as ``app.name``;
    None when the database does not answer (a worker started before its database
    waits for it, as it always has, rather than failing here)."""
    try:
        executor = MigrationExecutor(connections[alias])
        targets = [key for key in executor.loader.graph.leaf_nodes() if key[0] == "dispatch_jobs"]
        plan = executor.migration_plan(targets)
    except TRANSIENT_ERRORS:
        reset_connection()
        return None
    return [f"{migration.app_label}.{migration.name}" for migration, _ in plan]
