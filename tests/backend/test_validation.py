"""Enqueue-time validation: every rule names the task and the problem, and no row
is written."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest
from django.test import override_settings

from dispatch_jobs.compat import InvalidTask
from dispatch_jobs.models import Job
from dispatch_jobs.validation import InvalidArguments
from tests.backend.typed import dispatch_task
from tests.jobs import tasks

pytestmark = pytest.mark.django_db

ADD = "tests.jobs.tasks.add"
# Typed as our DispatchTask: these calls are wrong on purpose, and the backend
# (not the type checker) must refuse them.
add_task = dispatch_task(tasks.add)


def refused(call, *fragments: str, error: type[Exception] = InvalidTask) -> str:
    """Run ``call``, which must raise ``error`` naming every fragment, and write
    nothing."""
    before = Job.objects.count()
    with pytest.raises(error) as excinfo:
        call()
    message = str(excinfo.value)
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in {message!r}"
    assert Job.objects.count() == before
    return message


# --- arguments that are not JSON: which one, and its type


def test_positional_argument_not_json():
    refused(
        lambda: add_task.enqueue(object(), 2),
        ADD,
        "argument args[0] is object",
        "not JSON-serialisable",
        error=InvalidArguments,
    )


def test_nested_keyword_argument_not_json_names_the_path():
    refused(
        lambda: tasks.greet.enqueue("x", punctuation={"when": datetime.now(UTC)}),
        "tests.jobs.tasks.greet",
        "argument kwargs['punctuation']['when'] is datetime",
        error=InvalidArguments,
    )


def test_set_and_bytes_are_not_json():
    refused(lambda: add_task.enqueue({1, 2}, 1), ADD, "args[0] is set", error=InvalidArguments)
    refused(lambda: add_task.enqueue(b"ab", 1), ADD, "args[0] is bytes", error=InvalidArguments)


def test_non_string_dict_keys_are_refused():
    refused(
        lambda: add_task.enqueue([{1: "one"}], 1),
        ADD,
        "argument args[0][0] key 1 is int",
        "JSON keys are strings",
        error=InvalidArguments,
    )


def test_nan_is_refused():
    refused(lambda: add_task.enqueue(math.nan, 1), ADD, "args[0] is float nan")


# --- arguments that do not bind to the signature


def test_missing_argument():
    refused(
        lambda: add_task.enqueue(1),
        ADD,
        "do not match its signature (a: int, b: int)",
        "missing a required argument: 'b'",
        error=InvalidArguments,
    )


def test_unexpected_keyword_argument():
    refused(
        lambda: add_task.enqueue(1, 2, c=3),
        ADD,
        "got an unexpected keyword argument 'c'",
        error=InvalidArguments,
    )


def test_too_many_positional_arguments():
    refused(lambda: add_task.enqueue(1, 2, 3), ADD, "too many positional arguments")


def test_takes_context_is_accounted_for():
    """The worker passes the context; the caller's first argument is ``label``."""
    tasks.attempt_number.enqueue("first")  # binds: context is supplied by the worker
    refused(
        lambda: tasks.attempt_number.enqueue("a", "b"),
        "tests.jobs.tasks.attempt_number",
        "signature (label: str = '')",
        "too many positional arguments",
    )


# --- payload over the cap: names the largest argument


@override_settings(DISPATCH_JOBS={"MAX_PAYLOAD_BYTES": 200})
def test_payload_over_the_cap_names_the_largest_argument():
    refused(
        lambda: tasks.greet.enqueue("x" * 300, punctuation="!"),
        "tests.jobs.tasks.greet",
        "over the cap of 200 bytes",
        "the largest argument is args[0] at 302 bytes",
        error=InvalidArguments,
    )


# --- priority, queue and run_after out of bounds


def test_priority_above_the_maximum():
    refused(lambda: add_task.using(priority=101).enqueue(1, 2), ADD, "priority must be")


def test_priority_not_a_whole_number():
    # Not an int on purpose: the backend must refuse what the type checker would.
    refused(
        lambda: add_task.using(priority=1.5).enqueue(1, 2),  # type: ignore[arg-type]
        ADD,
        "priority must be",
    )
    refused(
        lambda: add_task.using(priority="high").enqueue(1, 2),  # type: ignore[arg-type]
        ADD,
        "priority must be",
    )


def test_queue_not_configured():
    refused(
        lambda: add_task.using(queue_name="nope").enqueue(1, 2),
        ADD,
        "Queue 'nope' is not valid for backend",
    )


@override_settings(
    TASKS={"default": {"BACKEND": "dispatch_jobs.backend.DispatchBackend", "QUEUES": []}}
)
def test_queue_name_longer_than_the_column():
    refused(
        lambda: add_task.using(queue_name="q" * 101).enqueue(1, 2),
        ADD,
        "queue_name must be a non-empty string of at most 100 characters",
    )


def test_naive_run_after_with_use_tz():
    refused(
        lambda: add_task.using(run_after=datetime(2030, 1, 1)).enqueue(1, 2),
        ADD,
        "run_after must be an aware datetime",
    )


def test_run_after_of_the_wrong_type():
    refused(
        lambda: add_task.using(run_after=timedelta(minutes=5)).enqueue(1, 2),
        ADD,
        "run_after must be a datetime, got timedelta",
    )


# --- unknown option names


def test_unknown_option_for_the_decorator():
    from dispatch_jobs import task

    refused(
        lambda: task(max_retry=5)(add_task.func),
        ADD,
        "unknown option 'max_retry'",
        "Known options: alias, backend",
    )


def test_unknown_option_for_using():
    refused(lambda: add_task.using(retries=5).enqueue(1, 2), ADD, "unknown option 'retries'")


# --- resources and scope


def test_resource_func_result_that_does_not_parse_names_the_task():
    refused(
        lambda: tasks.import_rows.enqueue("many"),
        "tests.jobs.tasks.import_rows",
        "resource_func result: Resource 'memory': cannot read quantity 'manyMi'",
    )


def test_override_above_the_declared_limit():
    refused(
        lambda: tasks.sized.using(resources={"cpu": 2}).enqueue(1),
        "tests.jobs.tasks.sized",
        "resource 'cpu' requests 2000 but its limit is 1000",
    )


def test_bad_resource_override():
    refused(
        lambda: add_task.using(resources={"memory": "lots"}).enqueue(1, 2),
        ADD,
        "cannot read quantity 'lots'",
    )


def test_scope_longer_than_the_column():
    refused(
        lambda: add_task.using(scope=("a" * 101, "")).enqueue(1, 2),
        ADD,
        "scope app_id is longer than 100 characters",
    )


def _long_named() -> None:
    pass


def test_stored_name_longer_than_the_column():
    from dispatch_jobs import task

    _long_named.__qualname__ = "f" * 300
    try:
        refused(lambda: task(_long_named), "is longer than 255 characters", "name= alias")
    finally:
        _long_named.__qualname__ = "_long_named"
