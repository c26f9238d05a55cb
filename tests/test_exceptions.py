"""Every error class dispatch_jobs defines lives in dispatch_jobs/exceptions.py and
is a DispatchJobsError; the standard bases callers rely on are kept."""

from __future__ import annotations

import ast
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from dispatch_jobs import compat, exceptions, validation, worker
from dispatch_jobs.exceptions import DispatchJobsError

PACKAGE = Path(exceptions.__file__).parent


def test_no_error_class_is_defined_outside_exceptions_py():
    """A class deriving from an exception is declared in exceptions.py only."""
    names = {name for name, value in vars(exceptions).items() if isinstance(value, type)}
    stray = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "exceptions.py" or "migrations" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                bases = {ast.unparse(base).rsplit(".", 1)[-1] for base in node.bases}
                if bases & names or any(b.endswith(("Error", "Exception")) for b in bases):
                    stray.append(f"{path.relative_to(PACKAGE)}:{node.name}")
    assert stray == []


def test_every_error_is_a_dispatch_jobs_error():
    errors = [
        value
        for value in vars(exceptions).values()
        if isinstance(value, type)
        and issubclass(value, BaseException)
        and value.__module__ == exceptions.__name__
    ]
    assert len(errors) > 20
    assert all(issubclass(error, DispatchJobsError) for error in errors)


def test_callers_keep_their_standard_bases():
    assert issubclass(exceptions.InvalidArguments, compat.InvalidTask)
    assert issubclass(exceptions.InvalidArguments, ValueError)
    assert issubclass(exceptions.Unschedulable, compat.InvalidTask)
    assert issubclass(exceptions.InvalidJob, ValueError)
    assert issubclass(exceptions.WorkerConfigError, ValueError)
    assert issubclass(exceptions.MetricsUnavailable, ImproperlyConfigured)


def test_the_paths_the_docs_name_still_import():
    assert validation.InvalidArguments is exceptions.InvalidArguments
    assert validation.Unschedulable is exceptions.Unschedulable
    assert worker.JobTimedOut is exceptions.JobTimedOut
    assert worker.JobCancelled is exceptions.JobCancelled
