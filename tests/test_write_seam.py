"""The store is the only writer of the app's rows (tests/seam.py): the static
scan finds nothing outside it, and both checks catch a planted write. Outside the
store, code imports only the names ``dispatch_jobs.store`` exports, and its read
querysets refuse to write."""

from __future__ import annotations

import ast
from datetime import UTC, datetime, timedelta

import pytest

from dispatch_jobs import database, store
from dispatch_jobs.exceptions import ReadOnlyRows
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


# --- one door: outside the store, only the store's face


def store_internals_imported(source: str, filename: str = "<source>") -> list[str]:
    """Imports of ``dispatch_jobs.store``'s modules (``store.db``, ``store.claim``,
    ...) rather than of the names ``dispatch_jobs.store`` itself exports."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            parts = module.lstrip(".").split(".")
            if "store" in parts and parts.index("store") < len(parts) - 1:
                found.append(f"{filename}:{node.lineno}: from {module} import ...")
            elif parts[-1] == "store":
                exported = set(store.__all__)
                hidden = [alias.name for alias in node.names if alias.name not in exported]
                if hidden:
                    found.append(f"{filename}:{node.lineno}: from {module} import {hidden}")
        elif isinstance(node, ast.Import):
            found += [
                f"{filename}:{node.lineno}: import {alias.name}"
                for alias in node.names
                if alias.name.startswith("dispatch_jobs.store.")
            ]
    return found


def test_no_module_outside_the_store_imports_its_internals() -> None:
    found = [
        hit
        for path in modules_outside_the_store()
        for hit in store_internals_imported(path.read_text(), str(path))
    ]
    assert found == []


def test_the_import_check_finds_planted_ones() -> None:
    assert len(store_internals_imported("from ..store import db")) == 1
    assert len(store_internals_imported("from ..store.claim import claim_jobs")) == 1
    assert len(store_internals_imported("import dispatch_jobs.store.leases")) == 1
    assert store_internals_imported("from ..store import reads, claim_jobs") == []
    assert store_internals_imported("from .. import store") == []


@pytest.mark.parametrize(
    ("write", "args"),
    [
        ("update", {"priority": 1}),
        ("delete", {}),
        ("create", {"name": "x"}),
        ("get_or_create", {"name": "x"}),
        ("update_or_create", {"name": "x"}),
    ],
)
def test_the_stores_read_querysets_refuse_writes(write: str, args: dict[str, object]) -> None:
    job = JobFactory.create()
    for queryset in (store.reads.jobs(), store.reads.jobs().filter(pk=job.pk).order_by("id")):
        with pytest.raises(ReadOnlyRows, match=rf"Job rows .* \({write}\)"):
            getattr(queryset, write)(**args)
    with pytest.raises(ReadOnlyRows):
        store.reads.jobs().bulk_create([Job(name="x")])
    stored = Job.objects.get(pk=job.pk)
    assert (stored.priority, Job.objects.count()) == (job.priority, 1)
    # Reading works as on any queryset, the model's own methods included.
    assert store.reads.jobs().filter(pk=job.pk).ready().count() == 1
    assert store.reads.workers().count() == 0


def test_database_now_is_the_database_clock() -> None:
    before = datetime.now(UTC)
    now = database.database_now()
    after = datetime.now(UTC)
    assert now.tzinfo is not None and now.utcoffset() == timedelta(0)
    # The database runs on this machine: its clock agrees with ours within a second.
    assert before - timedelta(seconds=1) <= now <= after + timedelta(seconds=1)
