"""Shared fixtures. The database is whichever DATABASE_URL names (see settings)."""

from __future__ import annotations

import pytest

from dispatch_jobs.models import Job

# Every test runs under the write-seam guard: only dispatch_jobs/store/ writes the app's rows.
pytest_plugins = ["tests.seam"]


@pytest.fixture
def make_job():
    """Build an unsaved job with sensible defaults; the store fills the rest."""

    def build(**fields) -> Job:
        fields.setdefault("name", "tests.jobs.tasks.noop")
        fields.setdefault("queue", "default")
        fields.setdefault("payload", {"args": [], "kwargs": {}})
        return Job(**fields)

    return build
