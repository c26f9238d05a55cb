"""System checks of the tasks backend: one test per id."""

from __future__ import annotations

import copy

import pytest
from django.conf import settings
from django.core.checks import run_checks
from django.test import override_settings

from dispatch_jobs.checks import check_tasks_settings
from dispatch_jobs.compat import task_backends

BACKEND = "dispatch_jobs.backend.DispatchBackend"


def _ids(messages) -> list[str]:
    return [m.id for m in messages]


def test_configured_backend_is_clean():
    assert task_backends["default"].check() == []


def test_e101_app_not_installed():
    apps = [a for a in settings.INSTALLED_APPS if a != "dispatch_jobs"]
    with override_settings(INSTALLED_APPS=apps):
        messages = task_backends["default"].check()
    assert "dispatch_jobs.E101" in _ids(messages)
    assert "'dispatch_jobs' is not in INSTALLED_APPS" in messages[0].msg


def test_e102_unknown_options():
    tasks_setting = {"default": {"BACKEND": BACKEND, "OPTIONS": {"QUEUE_TIMEOUT": 3}}}
    with override_settings(TASKS=tasks_setting):
        messages = task_backends["default"].check()
    assert _ids(messages) == ["dispatch_jobs.E102"]
    assert "unknown key 'QUEUE_TIMEOUT'" in messages[0].msg


@pytest.mark.django_db
@pytest.mark.filterwarnings("ignore:Overriding setting DATABASES")
def test_database_warnings_are_not_repeated_by_the_backend():
    """The job database's warnings come from checks.check_settings alone: the
    backend repeating them printed each one twice."""
    databases = copy.deepcopy(settings.DATABASES)
    databases["default"] = {"ENGINE": "django.db.backends.sqlite3", "NAME": "x.sqlite3"}
    with override_settings(DATABASES=databases):
        messages = run_checks()
    ids = [m.id for m in messages if m.id.startswith("dispatch_jobs.")]
    assert ids == ["dispatch_jobs.W002"]


def test_e103_scope_from_request_not_callable():
    with override_settings(DISPATCH_JOBS={"SCOPE_FROM_REQUEST": "tests.nowhere.func"}):
        messages = check_tasks_settings()
    assert _ids(messages) == ["dispatch_jobs.E103"]
    assert "cannot be imported" in messages[0].msg
    with override_settings(DISPATCH_JOBS={"SCOPE_FROM_REQUEST": "dispatch_jobs.conf.DEFAULTS"}):
        assert _ids(check_tasks_settings()) == ["dispatch_jobs.E103"]
    path = "tests.backend.test_middleware.tenant_scope"
    with override_settings(DISPATCH_JOBS={"SCOPE_FROM_REQUEST": path}):
        assert check_tasks_settings() == []
