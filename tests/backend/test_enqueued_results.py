"""The results enqueue returns: each equal to the one Django's constructor builds
from the same row and call, on the fast path and on the fallback alike."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from dispatch_jobs import compat
from dispatch_jobs.results import _SlotSetters, enqueued_result, enqueued_results
from tests.jobs import tasks

WHEN = datetime(2026, 12, 4, 17, 0, tzinfo=UTC)

# Arguments of every shape normalize_json() handles: flat and nested, tuples,
# str subclasses, int keys, bools (an int subclass), None, floats, unicode.
CALLS: list[tuple[Any, Any]] = [
    ((), {}),
    ((1, "two", 3.5, None, True), {}),
    ((), {"a": 1, "b": "x", "c": None}),
    (((1, 2), [3, (4,)]), {"nested": {"k": (5, 6)}}),
    ([{"a": [1, {"b": 2}]}], {"t": ()}),
    ((compat.TaskResultStatus.READY,), {"e": compat.TaskResultStatus.FAILED}),
    (("é\u2028",), {"int_key_inside": {1: "one"}}),
    ((False, 0, 0.0, ""), {"z": False}),
]


def test_the_fast_builder_is_in_use_on_this_django() -> None:
    # Django 6's TaskResult is a slotted dataclass with these fields; if a release
    # changes it, the fallback (tested below) takes over and this test says so.
    assert _SlotSetters.get() is not None


@pytest.mark.parametrize(("args", "kwargs"), CALLS)
def test_each_result_equals_the_constructors(args: Any, kwargs: Any) -> None:
    task = tasks.take_anything
    [fast] = enqueued_results(task, "default", [(42, WHEN)], [(args, kwargs)])
    slow = enqueued_result(task, "default", 42, WHEN, args, kwargs)
    assert fast == slow
    for name in ("args", "kwargs", "errors", "worker_ids"):
        assert type(getattr(fast, name)) is type(getattr(slow, name))
    assert fast.args is not args and fast.kwargs is not kwargs  # copies, not the caller's
    with pytest.raises(ValueError, match="not finished"):
        fast.return_value  # noqa: B018 - the property raises for a READY result


def test_results_are_distinct_objects_with_their_own_lists() -> None:
    task = tasks.take_anything
    rows = [(1, WHEN), (2, WHEN)]
    first, second = enqueued_results(task, "default", rows, [((1,), {}), ((1,), {})])
    assert (first.id, second.id) == ("1", "2")
    assert first.errors is not second.errors and first.worker_ids is not second.worker_ids
    assert first.args is not second.args


def test_a_changed_result_class_falls_back_to_the_constructor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A field the builder does not know: it must not guess, the constructor builds.
    monkeypatch.setattr("dispatch_jobs.results._RESULT_FIELDS", frozenset({"task", "id"}))
    monkeypatch.setattr(_SlotSetters, "_checked", False)
    monkeypatch.setattr(_SlotSetters, "_instance", None)
    assert _SlotSetters.get() is None
    task = tasks.take_anything
    [result] = enqueued_results(task, "default", [(3, WHEN)], [(((1,),), {})])
    assert result == enqueued_result(task, "default", 3, WHEN, ((1,),), {})
    assert result.args == [[1]]


def test_a_builder_that_disagrees_with_the_constructor_is_not_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Should Django's constructor start building something else, the sample
    # comparison catches it: here the constructor's result differs.
    monkeypatch.setattr("dispatch_jobs.results.enqueued_result", lambda *a: "not a result")
    monkeypatch.setattr(_SlotSetters, "_checked", False)
    monkeypatch.setattr(_SlotSetters, "_instance", None)
    assert _SlotSetters.get() is None
