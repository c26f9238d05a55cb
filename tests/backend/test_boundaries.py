"""Boundaries refuse the absurd before any row exists (issue 10, points 3 and 7).

Every bound of ``dispatch_jobs.limits`` and every unstorable kind of value, at each
door it can come through: ``@task``, ``using()``, the enqueue call (arguments,
keyword names, dict keys, the context's scope, a ``resource_func``'s result) and
``enqueue_on_commit``. Each refusal is checked the same way: the error class, a
message naming the field, no row written, and the caller's transaction still
usable afterwards. Run on every database (``DATABASE_URL``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import transaction
from django.test import override_settings

from dispatch_jobs import limits, task
from dispatch_jobs.compat import InvalidTask
from dispatch_jobs.models import Job
from dispatch_jobs.scope import scope
from dispatch_jobs.validation import InvalidArguments
from tests.backend.typed import dispatch_task
from tests.jobs import tasks

pytestmark = pytest.mark.django_db

add_task = dispatch_task(tasks.add)
import_rows = dispatch_task(tasks.import_rows)
HERE = "tests.backend.test_boundaries"


def anything(*args: Any, **kwargs: Any) -> None:
    """Accepts every argument, so only storability decides."""


def plain(a: Any = None) -> None:
    """Defined with options by the tests."""


def _many_keys(n: int) -> dict[str, int]:
    return {f"key{i}": 1 for i in range(n)}


def many_custom_keys(n: int) -> None:
    """Its resource_func asks for ``n`` custom keys."""


anything_task = dispatch_task(task(anything))
keys_task = dispatch_task(task(resource_func=_many_keys)(many_custom_keys))


def refused(call: Callable[[], object], error: type[Exception], *fragments: str) -> str:
    """Run ``call`` inside the caller's transaction: it must raise ``error`` naming
    every fragment, write nothing, and leave the transaction usable (a later
    query and a later enqueue in the same atomic block work)."""
    before = Job.objects.count()
    with transaction.atomic():
        with pytest.raises(error) as excinfo:
            call()
        assert Job.objects.count() == before  # no row, and the connection still answers
        good = tasks.add.enqueue(1, 2)
    message = str(excinfo.value)
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in {message!r}"
    assert Job.objects.count() == before + 1
    assert Job.objects.get(pk=good.id).payload == {"args": [1, 2], "kwargs": {}}
    return message


# --- unstorable argument values: every kind at every place


def _nested(depth: int) -> list[Any]:
    """A list nested ``depth`` levels deep: ``_nested(2) == [[]]``."""
    value: list[Any] = []
    for _ in range(depth - 1):
        value = [value]
    return value


KINDS = [
    pytest.param("a\x00b", "contains a NUL character (\\x00)", id="nul"),
    pytest.param("a\ud800b", "contains a lone surrogate ('\\ud800')", id="surrogate"),
    pytest.param(math.nan, "is float nan, which JSON cannot represent", id="nan"),
    pytest.param(math.inf, "is float inf, which JSON cannot represent", id="infinity"),
    pytest.param(-math.inf, "is float -inf", id="minus-infinity"),
    pytest.param(_nested(30), "nests lists or dicts deeper than 29 levels", id="depth-30"),
    pytest.param(_nested(10_000), "deeper than 29 levels", id="depth-10000"),
    pytest.param(object(), "is object", id="not-json"),
]


@pytest.mark.parametrize(("value", "problem"), KINDS)
def test_unstorable_positional_argument(value, problem):
    refused(
        lambda: anything_task.enqueue(1, value),
        InvalidArguments,
        f"Task {HERE}.anything",
        "argument args[1]",
        problem,
    )


@pytest.mark.parametrize(("value", "problem"), KINDS)
def test_unstorable_value_inside_a_dict_argument(value, problem):
    refused(
        lambda: anything_task.enqueue({"user": {"name": value}}),
        InvalidArguments,
        "argument args[0]['user']['name']",
        problem,
    )


@pytest.mark.parametrize(("value", "problem"), KINDS)
def test_unstorable_keyword_argument(value, problem):
    refused(
        lambda: anything_task.enqueue(note=[value]),
        InvalidArguments,
        "argument kwargs['note'][0]",
        problem,
    )


STRING_KINDS = [
    pytest.param("a\x00b", "contains a NUL character (\\x00)", id="nul"),
    pytest.param("a\udfffb", "contains a lone surrogate ('\\udfff')", id="surrogate"),
]


@pytest.mark.parametrize(("name", "problem"), STRING_KINDS)
def test_unstorable_keyword_name(name, problem):
    refused(
        lambda: anything_task.enqueue(**{name: 1}),
        InvalidArguments,
        f"argument kwargs key {name!r}",
        problem,
    )


@pytest.mark.parametrize(("key", "problem"), STRING_KINDS)
def test_unstorable_dict_key(key, problem):
    refused(
        lambda: anything_task.enqueue([{"ok": 1, key: 2}]),
        InvalidArguments,
        f"argument args[0][0] key {key!r}",
        problem,
    )


def test_unstorable_value_is_found_in_bulk_and_nothing_is_written():
    refused(
        lambda: anything_task.enqueue_many([((1,), {}), ((2,), {}), (("x\x00",), {})]),
        InvalidArguments,
        "argument args[0] contains a NUL character",
    )


def test_deepest_storable_argument_is_stored_and_read_back():
    """29 levels inside an argument is the bound: the payload is then 31 levels
    deep, which MariaDB's JSON check still accepts (it refuses 32)."""
    value = _nested(limits.ARGUMENT_MAX_DEPTH)
    result = anything_task.enqueue(value, keyword=value)
    job = Job.objects.get(pk=result.id)
    assert job.payload == {"args": [value], "kwargs": {"keyword": value}}


def test_storable_unicode_is_accepted():
    result = anything_task.enqueue("é 🎉", {"ключ": "значение"}, ratio=1.5)
    assert Job.objects.get(pk=result.id).payload["args"] == ["é 🎉", {"ключ": "значение"}]


@override_settings(DISPATCH_JOBS={"MAX_PAYLOAD_BYTES": 100})
def test_a_value_shared_exponentially_is_stopped_at_the_payload_cap():
    """A list holding the same list twice, 25 times over, is 2**25 values as JSON:
    the walk stops at the cap's count instead of running for minutes."""
    value: list[Any] = []
    for _ in range(25):
        value = [value, value]
    refused(
        lambda: anything_task.enqueue(value),
        InvalidArguments,
        "argument args[0] holds more than 100 values",
    )


# --- scope ids


@pytest.mark.parametrize(("text", "problem"), STRING_KINDS)
def test_unstorable_scope_through_using(text, problem):
    refused(
        lambda: add_task.using(scope=("app", text)).enqueue(1, 2),
        InvalidTask,
        "scope org_id",
        problem,
    )


@pytest.mark.parametrize(("text", "problem"), STRING_KINDS)
def test_unstorable_scope_from_the_context(text, problem):
    def call() -> None:
        with scope(app_id=text):
            tasks.add.enqueue(1, 2)

    refused(call, InvalidTask, "scope app_id", problem)


# --- queue, stored name, resource class


@override_settings(
    TASKS={"default": {"BACKEND": "dispatch_jobs.backend.DispatchBackend", "QUEUES": []}}
)
@pytest.mark.parametrize(("text", "problem"), STRING_KINDS)
def test_unstorable_queue_name(text, problem):
    refused(
        lambda: add_task.using(queue_name=text).enqueue(1, 2), InvalidTask, "queue_name", problem
    )
    refused(lambda: task(queue_name=text)(plain), InvalidTask, "queue_name", problem)


@pytest.mark.parametrize(("text", "problem"), STRING_KINDS)
def test_unstorable_stored_name_and_resource_class(text, problem):
    refused(lambda: task(name=f"job{text}")(plain), InvalidTask, "alias (name=)", problem)
    refused(lambda: task(resource_class=text)(plain), InvalidTask, "resource_class", problem)


# --- durations


DURATIONS = [
    pytest.param("lease_ttl", timedelta(milliseconds=500), "between 1s and 7 days", id="ttl-0.5s"),
    pytest.param("lease_ttl", timedelta(days=8), "between 1s and 7 days", id="ttl-8d"),
    pytest.param(
        "lease_ttl", timedelta(days=999_999_999), "between 1s and 7 days", id="ttl-absurd"
    ),
    pytest.param("lease_ttl", 1e300, "between 1s and 7 days", id="ttl-1e300s"),
    pytest.param("lease_ttl", math.inf, "between 1s and 7 days", id="ttl-inf"),
    pytest.param("lease_ttl", math.nan, "must be positive", id="ttl-nan"),
    pytest.param("timeout", timedelta(microseconds=1), "between 1ms and 30 days", id="1us"),
    pytest.param("timeout", timedelta(days=31), "between 1ms and 30 days", id="31d"),
    pytest.param("timeout", timedelta(days=999_999_999), "30 days", id="timeout-absurd"),
    pytest.param(
        "retry_backoff_base", timedelta(days=31), "between 1ms and 30 days", id="base-31d"
    ),
    pytest.param("retry_backoff_cap", 10**30, "between 1ms and 30 days", id="cap-1e30s"),
]


@pytest.mark.parametrize(("option", "value", "bound"), DURATIONS)
def test_duration_out_of_bounds_at_definition(option, value, bound):
    refused(lambda: task(**{option: value})(plain), InvalidTask, f"{HERE}.plain", option, bound)


@pytest.mark.parametrize(
    "value",
    [timedelta(milliseconds=500), timedelta(days=8), timedelta(days=999_999_999), math.inf],
)
def test_lease_ttl_out_of_bounds_through_using(value):
    refused(
        lambda: add_task.using(lease_ttl=value).enqueue(1, 2),
        InvalidTask,
        "tests.jobs.tasks.add",
        "lease_ttl must be between 1s and 7 days",
    )


def test_lease_ttl_must_outlive_the_heartbeat():
    refused(
        lambda: add_task.using(lease_ttl=timedelta(seconds=10)),
        InvalidTask,
        "lease_ttl (10s) must be longer than DISPATCH_JOBS['HEARTBEAT_INTERVAL'] (10s)",
    )
    refused(lambda: task(lease_ttl=5)(plain), InvalidTask, "lease_ttl (5s) must be longer")


def test_lease_ttl_is_checked_against_the_heartbeat_again_at_enqueue():
    """``sized`` was defined with a 20 s lease under the default 10 s heartbeat;
    a project beating every minute would let that lease lapse between beats."""
    with override_settings(DISPATCH_JOBS={"HEARTBEAT_INTERVAL": timedelta(minutes=1)}):
        refused(
            lambda: tasks.sized.enqueue(1),
            InvalidTask,
            "tests.jobs.tasks.sized",
            "lease_ttl (20s) must be longer than DISPATCH_JOBS['HEARTBEAT_INTERVAL'] (60s)",
        )


def test_a_task_enqueued_once_is_checked_again_once_a_setting_changes():
    """The backend remembers a task it validated (a task is frozen), but not past
    a change of settings: the same ``sized`` that enqueued fine is refused once the
    heartbeat outgrows its lease, and accepted again once it no longer does."""
    assert Job.objects.get(pk=tasks.sized.enqueue(1).id).state == "pending"
    with override_settings(DISPATCH_JOBS={"HEARTBEAT_INTERVAL": timedelta(minutes=1)}):
        refused(
            lambda: tasks.sized.enqueue(2),
            InvalidTask,
            "tests.jobs.tasks.sized",
            "lease_ttl (20s) must be longer than DISPATCH_JOBS['HEARTBEAT_INTERVAL'] (60s)",
        )
    assert Job.objects.get(pk=tasks.sized.enqueue(3).id).args == [3]


def test_a_task_is_validated_once_until_a_setting_changes(monkeypatch):
    from dispatch_jobs.backend import DispatchBackend

    seen: list[object] = []
    validate = DispatchBackend._validate

    def counted(self: DispatchBackend, task: Any) -> None:
        seen.append(task)
        validate(self, task)

    monkeypatch.setattr(DispatchBackend, "_validate", counted)
    # Tasks made here, so no earlier test has had them validated.
    fresh = add_task.using(priority=1)
    fresh.enqueue(1, 2)
    fresh.enqueue(3, 4)
    fresh.enqueue_many([((5, 6), {})])
    assert [t is fresh for t in seen] == [True]
    other = add_task.using(priority=3)  # another task: validated on its own
    other.enqueue(1, 2)
    other.enqueue(1, 2)
    assert [t is other for t in seen] == [False, True]
    with override_settings(DISPATCH_JOBS={"HEARTBEAT_INTERVAL": timedelta(seconds=5)}):
        fresh.enqueue(1, 2)
    assert [t is fresh for t in seen] == [True, False, True]
    assert Job.objects.filter(priority=1).count() == 4


def test_bounds_themselves_are_accepted():
    for option in ("lease_ttl", "timeout", "retry_backoff_base", "retry_backoff_cap"):
        low, high = limits.duration_bounds(option)
        if option == "lease_ttl":
            low = timedelta(seconds=11)  # above the default heartbeat
        for value in (low, high):
            options: dict[str, Any] = {option: value}
            assert getattr(task(**options)(plain), option) == value
    defined = dispatch_task(
        task(lease_ttl=limits.LEASE_TTL_MAX, timeout=limits.TIMEOUT_MAX)(anything)
    )
    job = Job.objects.get(pk=defined.enqueue().id)
    assert (job.lease_ttl, job.timeout) == (limits.LEASE_TTL_MAX, limits.TIMEOUT_MAX)


# --- integers


@pytest.mark.parametrize("value", [limits.MAX_RETRIES_MAX + 1, 2**31, 2**80, -1])
def test_max_retries_out_of_bounds(value):
    refused(
        lambda: task(max_retries=value)(plain),
        InvalidTask,
        "max_retries must be an integer from 0 to 1000",
    )


@pytest.mark.parametrize("value", [101, 2**31, 2**80, -(2**63)])
def test_priority_out_of_bounds(value):
    refused(lambda: add_task.using(priority=value), InvalidTask, "priority must be")
    refused(lambda: task(priority=value)(plain), InvalidTask, "priority must be")


# --- run_after


@pytest.mark.parametrize(
    "when",
    [
        datetime(1, 1, 1, tzinfo=UTC),
        datetime(999, 12, 31, tzinfo=UTC),
        datetime(9999, 12, 31, 23, 59, tzinfo=UTC),
        datetime.max.replace(tzinfo=UTC),
    ],
    ids=["year-1", "year-999", "last-minute", "max"],
)
def test_run_after_outside_what_every_database_stores(when):
    refused(
        lambda: add_task.using(run_after=when).enqueue(1, 2),
        InvalidTask,
        "tests.jobs.tasks.add",
        f"run_after {when.isoformat()} is outside 1000-01-02..9999-12-30 (UTC)",
    )


def test_run_after_at_the_bounds_is_stored():
    for when in (limits.RUN_AFTER_MIN, limits.RUN_AFTER_MAX):
        result = add_task.using(run_after=when).enqueue(1, 2)
        assert Job.objects.get(pk=result.id).run_at == when


# --- resources


RESOURCES = [
    pytest.param({"memory": 2**80}, "Resource 'memory'", "over the maximum", id="memory-2**80"),
    pytest.param({"memory": "9Pi"}, "Resource 'memory'", "9007199254740991", id="memory-9Pi"),
    pytest.param({"cpu": 10**13}, "Resource 'cpu'", "over the maximum", id="cpu"),
    pytest.param({"gpu": "1" * 10_000}, "Resource 'gpu'", "over the maximum", id="gpu-10k-digits"),
    pytest.param({"fpga": 2**60}, "Resource 'fpga'", "over the maximum", id="custom-count"),
    pytest.param({"k" * 10_000: 1}, "Custom resource key 'kkkk", "at most 60", id="key-10k"),
    pytest.param({"k" * 61: 1}, "Custom resource key", "at most 60 characters", id="key-61"),
    pytest.param({"a,b": 1}, "Custom resource key 'a,b'", "joined by ','", id="delimiter"),
    pytest.param({"a\x00b": 1}, "Custom resource key 'a\\x00b'", "is not valid", id="nul-key"),
    pytest.param(_many_keys(9), "9 custom resource keys", "at most 8", id="nine-keys"),
]


@pytest.mark.parametrize(("resources", "names", "bound"), RESOURCES)
def test_resources_out_of_bounds_at_definition(resources, names, bound):
    refused(
        lambda: task(resources=resources)(plain),
        InvalidTask,
        f"{HERE}.plain: resources:",
        names,
        bound,
    )


@pytest.mark.parametrize(("resources", "names", "bound"), RESOURCES)
def test_resources_out_of_bounds_through_using(resources, names, bound):
    refused(lambda: add_task.using(resources=resources).enqueue(1, 2), InvalidTask, names, bound)


def test_resource_limits_out_of_bounds():
    refused(
        lambda: task(resource_limits={"memory": 2**80})(plain),
        InvalidTask,
        "resource_limits: Resource 'memory'",
        "over the maximum",
    )


def test_resources_out_of_bounds_from_resource_func_at_enqueue():
    refused(
        lambda: tasks.import_rows.enqueue(2**70),
        InvalidTask,
        "tests.jobs.tasks.import_rows: resource_func result: Resource 'memory'",
        "over the maximum",
    )
    refused(lambda: keys_task.enqueue(9), InvalidTask, "9 custom resource keys", "at most 8")


def test_custom_keys_counted_over_declared_floor_and_override_together():
    declared = dispatch_task(task(resources=_many_keys(5))(plain))
    refused(
        lambda: declared.using(resources={f"other{i}": 1 for i in range(4)}),
        InvalidTask,
        "9 custom resource keys",
    )


def test_largest_resources_are_stored():
    top = limits.RESOURCE_QUANTITY_MAX
    eight = {f"{'k' * 59}{i}": 1 for i in range(limits.CUSTOM_KEYS_MAX)}
    result = add_task.using(resources={"memory": top, **eight}).enqueue(1, 2)
    job = Job.objects.get(pk=result.id)
    assert job.memory == top
    assert len(job.custom_keys) <= limits.CUSTOM_KEYS_COLUMN_MAX
    assert sorted(k for k in job.resources if k != "memory") == sorted(eight)


# --- enqueue_on_commit: everything is checked at the call


ON_COMMIT_REFUSALS = [
    pytest.param(lambda: add_task.enqueue_on_commit(1, math.nan), InvalidArguments, id="nan"),
    pytest.param(lambda: anything_task.enqueue_on_commit(x="\x00"), InvalidArguments, id="nul"),
    pytest.param(lambda: anything_task.enqueue_on_commit(_nested(40)), InvalidArguments, id="deep"),
    pytest.param(lambda: add_task.enqueue_on_commit(1), InvalidArguments, id="binding"),
    pytest.param(
        lambda: add_task.using(scope=("\x00", "")).enqueue_on_commit(1, 2), InvalidTask, id="scope"
    ),
    pytest.param(lambda: import_rows.enqueue_on_commit(2**70), InvalidTask, id="resource_func"),
]


@pytest.mark.parametrize(("call", "error"), ON_COMMIT_REFUSALS)
def test_enqueue_on_commit_refuses_at_the_call(call, error, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        refused(call, error)
    # Only the valid enqueue of ``refused`` ran; nothing was left for the commit.
    assert callbacks == []


def test_enqueue_on_commit_refuses_a_scope_from_the_context_at_the_call(
    django_capture_on_commit_callbacks,
):
    def call() -> None:
        with scope(org_id="bad\x00"):
            add_task.enqueue_on_commit(1, 2)

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        refused(call, InvalidTask, "scope org_id", "NUL")
    assert callbacks == []


def test_enqueue_on_commit_writes_what_was_checked_at_the_call(
    django_capture_on_commit_callbacks,
):
    """The scope of the call's context and its arguments as they were then: the
    commit may come after the scope block ended and the list was changed."""
    items: list[Any] = [1, 2]
    with django_capture_on_commit_callbacks(execute=True) as callbacks, transaction.atomic():
        with scope(app_id="shop", org_id="org-7"):
            anything_task.enqueue_on_commit(items)
        items.append("\x00 appended after the call")
        assert Job.objects.count() == 0
    assert len(callbacks) == 1
    job = Job.objects.get()
    assert (job.scope_app_id, job.scope_org_id) == ("shop", "org-7")
    assert job.payload == {"args": [[1, 2]], "kwargs": {}}


# --- a refusal the database makes after all keeps the caller's transaction usable


def test_a_row_the_database_refuses_leaves_the_callers_transaction_usable():
    """Validation should leave nothing for the database to refuse; should a value
    get past it, the INSERT runs in a savepoint: the error reaches the caller and
    the transaction goes on. A priority over 64 bits is refused by every database
    (or its driver) without the backend's checks, which ``insert_jobs`` skips."""
    from dispatch_jobs.store import NewJobs, insert_jobs

    row = NewJobs(1, {"name": "tests.jobs.tasks.add", "queue": "default", "priority": 2**70}, {})
    refused(lambda: insert_jobs(row), Exception)


# --- the store's own door (store.enqueue_job) applies the same limits


@pytest.mark.parametrize(
    ("fields", "fragment"),
    [
        ({"payload": {"args": [math.nan], "kwargs": {}}}, "payload['args'][0] is float nan"),
        ({"payload": {"args": ["\x00"], "kwargs": {}}}, "payload['args'][0] contains a NUL"),
        ({"payload": {"args": _nested(31), "kwargs": {}}}, "deeper than 31 levels"),
        ({"queue": "q\x00"}, "queue of job"),
        ({"scope_org_id": "\ud800"}, "scope_org_id of job"),
        ({"priority": 2**31}, "priority of"),
        ({"max_retries": 2**40}, "max_retries of"),
        ({"timeout": timedelta(days=999_999_999)}, "timeout of"),
        ({"lease_ttl": timedelta(microseconds=1)}, "lease_ttl of"),
        ({"run_at": datetime(1, 1, 1, tzinfo=UTC)}, "run_at of"),
        ({"resources": {"memory": 2**80}}, "Resource 'memory'"),
        ({"resources": {"x" * 100: 1}}, "at most 60 characters"),
        ({"resources": _many_keys(9)}, "9 custom resource keys"),
    ],
)
def test_store_enqueue_refuses_the_same(make_job, fields, fragment):
    from dispatch_jobs import store
    from dispatch_jobs.exceptions import InvalidJob

    refused(lambda: store.enqueue_job(make_job(**fields)), InvalidJob, fragment)
