"""One test per system-check id: it appears for a bad value, not for a good one."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings
from django.test import override_settings

from dispatch_jobs.checks import check_settings

SQLITE_GOOD = {
    "ENGINE": "django.db.backends.sqlite3",
    "NAME": "jobs.sqlite3",
    "OPTIONS": {
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA busy_timeout=5000;",
    },
}


def ids_for(dispatch_jobs: Any) -> set[str]:
    with override_settings(DISPATCH_JOBS=dispatch_jobs):
        return {message.id for message in check_settings()}


def ids_with_jobs_database(database: dict[str, Any]) -> set[str]:
    """Check ids with DISPATCH_JOBS pointing at an extra alias configured so."""
    databases = {**settings.DATABASES, "jobs": database}
    with override_settings(DATABASES=databases):
        return ids_for({"DATABASE": "jobs"})


def test_default_settings_pass() -> None:
    assert ids_for({}) == set()


def test_e001_settings_must_be_a_dict() -> None:
    assert "dispatch_jobs.E001" in ids_for(["MAX_PAYLOAD_BYTES", 1])
    assert "dispatch_jobs.E001" not in ids_for({"MAX_PAYLOAD_BYTES": 1})


def test_e002_unknown_key() -> None:
    assert "dispatch_jobs.E002" in ids_for({"MAX_PAYLOAD_BYTE": 1})
    assert "dispatch_jobs.E002" not in ids_for({"MAX_PAYLOAD_BYTES": 1})


@pytest.mark.parametrize("bad", [30, timedelta(0), -timedelta(seconds=1), "30s"])
def test_e003_durations_must_be_positive_timedeltas(bad: object) -> None:
    assert "dispatch_jobs.E003" in ids_for({"LEASE_TTL": bad})
    assert "dispatch_jobs.E003" not in ids_for({"LEASE_TTL": timedelta(seconds=30)})


@pytest.mark.parametrize(
    ("key", "bad", "good"),
    [
        ("MAX_PAYLOAD_BYTES", 0, 1),
        ("MAX_PAYLOAD_BYTES", "64k", 65536),
        ("LIST_PAGE_SIZE", True, 10),
        ("DEFAULT_MAX_RETRIES", -1, 0),
    ],
)
def test_e004_integers_in_range(key: str, bad: object, good: int) -> None:
    assert "dispatch_jobs.E004" in ids_for({key: bad})
    assert "dispatch_jobs.E004" not in ids_for({key: good})


def test_e005_database_alias_must_exist() -> None:
    assert "dispatch_jobs.E005" in ids_for({"DATABASE": "nowhere"})
    assert "dispatch_jobs.E005" not in ids_for({"DATABASE": "default"})


def test_e006_heartbeat_shorter_than_lease() -> None:
    bad = {"LEASE_TTL": timedelta(seconds=10), "HEARTBEAT_INTERVAL": timedelta(seconds=10)}
    good = {"LEASE_TTL": timedelta(seconds=30), "HEARTBEAT_INTERVAL": timedelta(seconds=10)}
    assert "dispatch_jobs.E006" in ids_for(bad)
    assert "dispatch_jobs.E006" not in ids_for(good)


@pytest.mark.filterwarnings("ignore:Overriding setting DATABASES")
def test_e007_sqlite_needs_immediate_transactions() -> None:
    deferred = {**SQLITE_GOOD, "OPTIONS": {"init_command": "PRAGMA journal_mode=WAL;"}}
    assert "dispatch_jobs.E007" in ids_with_jobs_database(deferred)
    assert "dispatch_jobs.E007" not in ids_with_jobs_database(SQLITE_GOOD)


@pytest.mark.filterwarnings("ignore:Overriding setting DATABASES")
def test_w001_sqlite_should_use_wal() -> None:
    rollback_journal = {**SQLITE_GOOD, "OPTIONS": {"transaction_mode": "IMMEDIATE"}}
    assert "dispatch_jobs.W001" in ids_with_jobs_database(rollback_journal)
    assert "dispatch_jobs.W001" not in ids_with_jobs_database(SQLITE_GOOD)
