"""The settings table (dispatch_jobs/conf/): each entry gives a typed attribute,
its default, the check of its value, and its row of the settings page."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import override_settings

from dispatch_jobs import checks
from dispatch_jobs.conf import DEFAULTS, TABLE, Settings, settings
from dispatch_jobs.setting_kinds import Duration, Integer

CHECKS = (
    checks.check_settings,
    checks.check_admin_settings,
    checks.check_tasks_settings,
    checks.check_worker_settings,
    checks.check_metrics_settings,
    checks.check_artifact_settings,
)


def ids_for(value: dict[str, object]) -> set[str]:
    with override_settings(DISPATCH_JOBS=value):
        return {message.id for check in CHECKS for message in check()}


def test_every_key_is_an_attribute_named_after_it():
    assert [setting.key for setting in TABLE] == list(DEFAULTS)
    assert len(TABLE) == len({setting.key for setting in TABLE})
    for setting in TABLE:
        assert getattr(Settings, setting.key.lower()) is setting


def test_attributes_read_defaults_then_user_values():
    with override_settings(DISPATCH_JOBS={}):
        assert settings.lease_ttl == timedelta(seconds=30)
        assert settings.worker_queues is None
        assert settings.listen_database == "default"  # unset: DATABASE's
    with override_settings(DISPATCH_JOBS={"WORKER_QUEUES": ("a", "b"), "REDACT": None}):
        assert settings.worker_queues == ["a", "b"]
        assert settings.redact == ""


@pytest.mark.parametrize("setting", TABLE, ids=lambda s: s.key)
def test_every_default_passes_its_own_check(setting):
    assert setting.problem(setting.default) is None


@pytest.mark.parametrize("setting", [s for s in TABLE if s.check], ids=lambda s: s.key)
def test_every_checked_setting_refuses_a_wrong_type_with_its_id(setting):
    """A value of no kind any setting takes is refused under the entry's own id, by
    the check function of its section."""
    assert setting.check in ids_for({setting.key: object()})
    assert ids_for({setting.key: setting.default}) == set()


def test_a_new_entry_is_checked_with_no_other_code():
    """What an entry declares is what the checks enforce: the bounds of a duration
    kind come from limits, an integer kind's floor from the entry."""
    lease = next(s for s in TABLE if s.key == "LEASE_TTL")
    assert isinstance(lease.kind, Duration)
    assert lease.problem(timedelta(days=8)) is not None
    assert lease.problem(timedelta(days=7)) is None
    assert "dispatch_jobs.E003" in ids_for({"LEASE_TTL": timedelta(milliseconds=500)})
    retries = next(s for s in TABLE if s.key == "DEFAULT_MAX_RETRIES")
    assert retries.kind == Integer(0)
    assert retries.problem(0) is None and retries.problem(-1) is not None


def test_every_entry_is_documented():
    assert [setting.key for setting in TABLE if not setting.doc.strip()] == []


def test_a_value_read_once_is_kept_until_a_setting_changes():
    with override_settings(DISPATCH_JOBS={"LEASE_TTL": timedelta(seconds=45)}):
        assert settings.lease_ttl == timedelta(seconds=45)
        assert settings.read_values["LEASE_TTL"] == timedelta(seconds=45)
        with override_settings(DISPATCH_JOBS={"LEASE_TTL": timedelta(seconds=12)}):
            # override_settings sends setting_changed: the kept value is forgotten.
            assert settings.lease_ttl == timedelta(seconds=12)
        assert settings.lease_ttl == timedelta(seconds=45)
    assert settings.lease_ttl == timedelta(seconds=30)


@pytest.fixture
def django_settings(settings):  # pytest-django's, under a name that leaves ours alone
    return settings


def test_the_settings_fixture_is_seen_too(django_settings):
    assert settings.max_payload_bytes == 64 * 1024
    django_settings.DISPATCH_JOBS = {"MAX_PAYLOAD_BYTES": 1000}
    assert settings.max_payload_bytes == 1000


def test_a_list_is_read_afresh_so_changing_one_changes_no_other():
    with override_settings(DISPATCH_JOBS={"WORKER_QUEUES": ["a", "b"]}):
        first = settings.worker_queues
        assert first == ["a", "b"]
        first.append("c")
        assert settings.worker_queues == ["a", "b"]
        assert "WORKER_QUEUES" not in settings.read_values
