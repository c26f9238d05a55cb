"""One test per system-check id: it appears for a bad value, not for a good one."""

from __future__ import annotations

import ast
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.core.checks import Warning
from django.test import override_settings

from dispatch_jobs.checks import SQLITE_OPTIONS, check_settings

SQLITE_GOOD = {
    "ENGINE": "django.db.backends.sqlite3",
    "NAME": "jobs.sqlite3",
    "OPTIONS": dict(SQLITE_OPTIONS),
}
# Django's startproject: SQLite with no OPTIONS at all.
SQLITE_DJANGO_DEFAULT = {"ENGINE": "django.db.backends.sqlite3", "NAME": "db.sqlite3"}


def ids_for(dispatch_jobs: Any) -> set[str]:
    with override_settings(DISPATCH_JOBS=dispatch_jobs):
        return {message.id for message in check_settings()}


def messages_with_jobs_database(database: dict[str, Any]) -> list[Any]:
    """Check messages with DISPATCH_JOBS pointing at an extra alias configured so."""
    databases = {**settings.DATABASES, "jobs": database}
    with override_settings(DATABASES=databases, DISPATCH_JOBS={"DATABASE": "jobs"}):
        return check_settings()


def ids_with_jobs_database(database: dict[str, Any]) -> set[str]:
    return {message.id for message in messages_with_jobs_database(database)}


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
def test_w002_sqlite_without_immediate_transactions() -> None:
    deferred = {**SQLITE_GOOD, "OPTIONS": {"init_command": "PRAGMA journal_mode=WAL;"}}
    assert "dispatch_jobs.W002" in ids_with_jobs_database(deferred)
    assert "dispatch_jobs.W002" not in ids_with_jobs_database(SQLITE_GOOD)


@pytest.mark.filterwarnings("ignore:Overriding setting DATABASES")
def test_w001_sqlite_should_use_wal() -> None:
    rollback_journal = {**SQLITE_GOOD, "OPTIONS": {"transaction_mode": "IMMEDIATE"}}
    assert "dispatch_jobs.W001" in ids_with_jobs_database(rollback_journal)
    assert "dispatch_jobs.W001" not in ids_with_jobs_database(SQLITE_GOOD)


@pytest.mark.filterwarnings("ignore:Overriding setting DATABASES")
def test_django_default_sqlite_gets_one_warning_with_the_docs_options() -> None:
    """startproject's SQLite: one warning (never an error, so migrate runs), whose
    hint is the whole OPTIONS dict docs/install.md shows."""
    messages = messages_with_jobs_database(SQLITE_DJANGO_DEFAULT)
    assert [m.id for m in messages] == ["dispatch_jobs.W002"]
    assert all(isinstance(m, Warning) and not m.is_serious() for m in messages)
    hint = messages[0].hint
    assert hint.startswith("Set DATABASES['jobs']['OPTIONS'] = {")
    assert ast.literal_eval(hint[hint.index("{") : hint.rindex("}") + 1]) == SQLITE_OPTIONS
    assert "docs/install.md" in hint


@pytest.mark.parametrize("page", ["docs/install.md", "docs/store.md"])
def test_docs_recommend_the_options_the_hints_give(page: str) -> None:
    assert docs_sqlite_options(Path(settings.BASE_DIR) / page) == SQLITE_OPTIONS


def docs_sqlite_options(page: Path) -> dict[str, Any]:
    """The ``"OPTIONS"`` dict of the SQLite ``DATABASES`` block in a docs page
    (parsed as Python, so its comments do not matter)."""
    blocks = re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.S)
    block = next(b for b in blocks if "transaction_mode" in b)
    for node in ast.walk(ast.parse(block)):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and key.value == "OPTIONS":
                    return ast.literal_eval(value)
    raise AssertionError(f"{page} shows no SQLite OPTIONS")


def test_e080_schedules_entries_must_parse() -> None:
    from dispatch_jobs.checks import check_schedules

    def ids(schedules: Any) -> set[str]:
        with override_settings(DISPATCH_JOBS={"SCHEDULES": schedules}):
            return {message.id for message in check_schedules()}

    good = {"n": {"task": "tests.jobs.tasks.add", "cron": "0 2 * * *", "timezone": "UTC"}}
    assert ids(good) == set()
    assert ids({"n": {**good["n"], "cron": "0 25 * * *"}}) == {"dispatch_jobs.E080"}
    assert ids({"n": {**good["n"], "timezone": "Nowhere/Else"}}) == {"dispatch_jobs.E080"}
    assert ids(["not", "a", "dict"]) == {"dispatch_jobs.E080"}


def test_e090_e091_e092_artifact_settings() -> None:
    from dispatch_jobs.checks import check_artifact_settings

    def ids(value: dict) -> set[str]:
        with override_settings(DISPATCH_JOBS=value):
            return {m.id for m in check_artifact_settings()}

    assert ids({}) == set()
    assert ids({"ARTIFACT_CACHE_BYTES": 0}) == {"dispatch_jobs.E090"}
    assert ids({"STAGING_RETRIES": -1}) == {"dispatch_jobs.E090"}
    assert ids({"ESTIMATE_RESOURCES": "yes"}) == {"dispatch_jobs.E091"}
    assert ids({"ARTIFACT_STORAGE": "nowhere"}) == {"dispatch_jobs.E092"}
