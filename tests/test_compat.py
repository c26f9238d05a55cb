"""compat: the one door to Django's tasks framework, built in (Django 6) or the
``django-tasks`` backport (Django 5.2)."""

from __future__ import annotations

import ast
from pathlib import Path

import django
import pytest
from django.core import checks

from dispatch_jobs import compat
from tests.backend.fresh_process import run_python

ROOT = Path(__file__).resolve().parents[1]
FRAMEWORK_MODULES = ("django.tasks", "django_tasks")


def _framework_imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        found += [
            f"{path.relative_to(ROOT)}:{node.lineno} {name}"
            for name in names
            if name.startswith(FRAMEWORK_MODULES)
        ]
    return found


def test_only_compat_imports_the_tasks_framework():
    # Anything else importing django.tasks would break on Django 5.2 (and the
    # backport on Django 6).
    sources = [*ROOT.joinpath("dispatch_jobs").rglob("*.py"), *ROOT.joinpath("tests").rglob("*.py")]
    stray = [
        hit
        for path in sources
        if path != ROOT / "dispatch_jobs" / "compat.py"
        for hit in _framework_imports(path)
    ]
    assert stray == []
    assert _framework_imports(ROOT / "dispatch_jobs" / "compat.py")


def test_the_framework_matches_the_django_version():
    module = compat.Task.__module__
    if django.VERSION >= (6, 0):
        assert module == "django.tasks.base"
    else:
        assert module == "django_tasks.base"


def test_the_logger_name_is_the_one_djangos_receivers_write_to():
    # The worker skips signal sends only this logger would hear: the wrong name
    # would skip sends a listening logger wants, or never skip at all.
    assert compat._signals.logger.name == compat.TASKS_LOGGER_NAME


def test_the_frameworks_backend_checks_run_without_its_app_installed():
    # The backport registers its checks in its AppConfig.ready(); compat imports
    # them so a 5.2 project need not add "django_tasks" to INSTALLED_APPS.
    registered = [c for c in checks.registry.registry.get_checks() if c.__name__ == "check_tasks"]
    assert [c.__module__ for c in registered] in (["django.tasks.checks"], ["django_tasks.checks"])


@pytest.mark.skipif(
    django.VERSION >= (6, 0), reason="Django 6 has the tasks framework built in: no backport"
)
def test_without_the_backport_django_5_2_says_what_to_install():
    done = run_python(
        "import sys; sys.modules['django_tasks'] = None\n"
        "from django.core.exceptions import ImproperlyConfigured\n"
        "try:\n"
        "    import dispatch_jobs.compat\n"
        "except ImproperlyConfigured as exc:\n"
        "    print(exc)\n"
    )
    assert done.returncode == 0, done.stderr
    assert "needs the django-tasks backport" in done.stdout
    assert 'pip install "dispatch-jobs[django52]"' in done.stdout
