"""Stable names: rows name a task by import path or alias; a missing task fails
clearly instead of crashing whoever loads it."""

from __future__ import annotations

import pytest

from dispatch_jobs.exceptions import TaskNotFound
from dispatch_jobs.names import load_task
from tests.backend.fresh_process import run_python
from tests.jobs import tasks


def test_import_path_and_alias_load_the_same_task():
    assert load_task("tests.jobs.tasks.greet") is tasks.greet
    assert load_task("greet-v1") is tasks.greet


def test_alias_resolves_in_a_process_that_never_imported_the_module():
    code = (
        "import sys, django; django.setup()\n"
        "assert 'tests.jobs.tasks' not in sys.modules, 'imported too early'\n"
        "from dispatch_jobs.names import load_task\n"
        "print(load_task('greet-v1').module_path)\n"
    )
    done = run_python(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "tests.jobs.tasks.greet"


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("tests.jobs.tasks.renamed_away", "renamed or removed"),
        ("no-such-alias", "renamed or removed"),
        ("tests.backend.broken_module.anything", "RuntimeError: this module is broken"),
    ],
)
def test_missing_tasks_raise_task_not_found(name, reason):
    with pytest.raises(TaskNotFound, match=reason):
        load_task(name)


def test_a_name_that_is_not_a_task():
    with pytest.raises(TaskNotFound, match="is not a task"):
        load_task("tests.jobs.tasks._touch")
