"""The store is the only writer of the app's rows (tests/seam.py): the static
scan finds nothing outside it, and both checks catch a planted write."""

from __future__ import annotations

import pytest

from dispatch_jobs.models import Job
from tests.factories import JobFactory
from tests.seam import PACKAGE, Guard, modules_outside_the_store, scan

pytestmark = pytest.mark.django_db

PLANTED = """
from dispatch_jobs.models import Job


def plant(pk):
    Job.objects.filter(pk=pk).update(priority=9)
"""


def test_no_module_outside_the_store_writes_the_apps_rows() -> None:
    modules = list(modules_outside_the_store())
    assert len(modules) > 40  # the scan reads the app, not an empty folder
    found = [hit for path in modules for hit in scan(path.read_text(), str(path))]
    assert found == []


def test_the_scan_finds_a_planted_write() -> None:
    assert len(scan(PLANTED)) == 1
    raw = 'cursor.execute("UPDATE dispatch_jobs_job SET priority = 1")'
    assert len(scan(raw)) == 1
    assert scan("names.update(more)\nLogEntry.objects.bulk_create(rows)") == []


def test_the_guard_catches_a_planted_write_at_run_time(write_seam: Guard) -> None:
    job = JobFactory.create()
    # Code compiled as a module of the app outside the store, as a careless
    # admin action would be.
    namespace: dict[str, object] = {}
    exec(compile(PLANTED, str(PACKAGE / "admin" / "planted.py"), "exec"), namespace)
    guard = Guard()
    with guard.installed():
        namespace["plant"](job.pk)  # type: ignore[operator]
    assert len(guard.violations) == 1 and "planted.py" in guard.violations[0]
    # The suite's own guard saw it too, and would fail this test for it.
    assert write_seam.violations == guard.violations
    write_seam.violations.clear()


def test_the_guard_lets_the_store_and_a_tests_own_set_up_write() -> None:
    guard = Guard()
    with guard.installed():
        job = JobFactory.create()  # the store's enqueue
        Job.objects.filter(pk=job.pk).update(priority=3)  # a test's own set-up
    assert guard.violations == []
