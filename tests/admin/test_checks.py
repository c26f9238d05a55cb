"""System checks of the admin's settings: one test per id."""

from __future__ import annotations

from datetime import timedelta

from django.test import override_settings

from dispatch_jobs.checks import check_admin_settings


def _ids(**settings) -> list[str]:
    with override_settings(DISPATCH_JOBS=settings):
        return [error.id for error in check_admin_settings()]


def test_defaults_pass():
    assert _ids() == []
    assert _ids(REDACT="tests.admin.redactors.hide_secrets") == []


def test_e050_statement_timeout_must_be_a_positive_timedelta():
    assert _ids(ADMIN_STATEMENT_TIMEOUT=5) == ["dispatch_jobs.E050"]
    assert _ids(ADMIN_STATEMENT_TIMEOUT=timedelta(0)) == ["dispatch_jobs.E050"]
    assert _ids(ADMIN_STATEMENT_TIMEOUT=timedelta(seconds=2)) == []


def test_e051_counts_and_caps_must_be_positive_integers():
    assert _ids(ADMIN_COUNT_THRESHOLD=0) == ["dispatch_jobs.E051"]
    assert _ids(ADMIN_BULK_CAP="1000") == ["dispatch_jobs.E051"]
    assert _ids(ADMIN_SCAN_CAP=True) == ["dispatch_jobs.E051"]
    assert _ids(ADMIN_BULK_CAP=50, ADMIN_COUNT_THRESHOLD=10, ADMIN_SCAN_CAP=1) == []


def test_e052_redact_must_name_a_callable():
    assert _ids(REDACT="no.such.module.func") == ["dispatch_jobs.E052"]
    assert _ids(REDACT="tests.admin.redactors.SECRET_KEYS") == ["dispatch_jobs.E052"]
    assert _ids(REDACT=42) == ["dispatch_jobs.E052"]
