"""System checks of LISTEN_DATABASE, the worker's LISTEN connection: one test per id."""

from __future__ import annotations

from typing import Any

import pytest
from django.conf import settings
from django.test import override_settings

from dispatch_jobs.checks import check_listen_settings
from dispatch_jobs.conf import settings as dj_settings

POSTGRES = {"ENGINE": "django.db.backends.postgresql", "NAME": "app", "HOST": "db"}
POOLED = {**POSTGRES, "HOST": "pgbouncer", "PORT": 6432, "DISABLE_SERVER_SIDE_CURSORS": True}
SQLITE = {"ENGINE": "django.db.backends.sqlite3", "NAME": "jobs.sqlite3"}


pytestmark = pytest.mark.filterwarnings("ignore:Overriding setting DATABASES")


def ids_for(value: dict[str, Any], **aliases: dict[str, Any]) -> set[str]:
    """Check ids with the jobs tables in the extra alias ``jobs`` (the real
    ``default`` is left alone: the test database lives there)."""
    databases = {**settings.DATABASES, **aliases}
    with override_settings(DATABASES=databases, DISPATCH_JOBS={"DATABASE": "jobs", **value}):
        return {message.id for message in check_listen_settings()}


def test_unset_listens_over_the_jobs_database():
    assert ids_for({}, jobs=POSTGRES) == set()
    with override_settings(DISPATCH_JOBS={"DATABASE": "jobs"}):
        assert dj_settings.listen_database == "jobs"  # unset: DATABASE
    with override_settings(DISPATCH_JOBS={"LISTEN_DATABASE": "listen"}):
        assert dj_settings.listen_database == "listen"


@pytest.mark.parametrize("bad", [1, ["listen"], True])
def test_e070_not_an_alias_name(bad):
    assert "dispatch_jobs.E070" in ids_for({"LISTEN_DATABASE": bad}, jobs=POSTGRES)


def test_e071_alias_missing_from_databases():
    assert "dispatch_jobs.E071" in ids_for({"LISTEN_DATABASE": "listen"}, jobs=POSTGRES)
    assert ids_for({"LISTEN_DATABASE": "listen"}, jobs=POOLED, listen=POSTGRES) == set()


def test_e072_alias_is_not_postgresql():
    assert "dispatch_jobs.E072" in ids_for(
        {"LISTEN_DATABASE": "listen"}, jobs=POSTGRES, listen=SQLITE
    )


def test_w070_listen_goes_through_a_transaction_mode_pooler():
    # Unset: LISTEN would go through the pooled jobs connection.
    assert "dispatch_jobs.W070" in ids_for({}, jobs=POOLED)
    # Named, but the named alias is pooled too.
    assert "dispatch_jobs.W070" in ids_for(
        {"LISTEN_DATABASE": "listen"}, jobs=POOLED, listen=POOLED
    )
    # Polling only (NOTIFY off), or a direct LISTEN alias: nothing to say.
    assert ids_for({"NOTIFY": False}, jobs=POOLED) == set()
    assert ids_for({"LISTEN_DATABASE": "listen"}, jobs=POOLED, listen=POSTGRES) == set()


def test_w071_listen_alias_names_another_database():
    other = {**POSTGRES, "NAME": "other"}
    assert "dispatch_jobs.W071" in ids_for({"LISTEN_DATABASE": "listen"}, jobs=POOLED, listen=other)
