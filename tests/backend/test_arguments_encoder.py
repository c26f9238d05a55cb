"""A batch's argument check decides exactly as the one-call check.

``check_calls`` encodes each call's arguments through ``arguments_encoder``,
which runs the common case's checks with what a batch shares looked up once and
hands every other call to ``encode_arguments``. Here the two are compared over
signatures (plain, not plain, taking the context), values (plain, odd, refused)
and caps (roomy, exactly the payload's size, a byte under it): the same payload
text and value, or the same error class with the same message.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import pytest

from dispatch_jobs import task
from dispatch_jobs.compat import Task
from dispatch_jobs.validation import arguments_encoder, encode_arguments
from tests.backend.typed import dispatch_task


def plain(a: Any, b: Any = 1, *, k: Any = None) -> None:
    """A plain signature."""


def takes_context(context: Any, a: Any, b: Any = 1) -> None:
    """A plain signature, after the context the worker passes."""


def positional_only(a: Any, /, b: Any = 1) -> None:
    """Not plain: ``Signature.bind`` decides."""


def anything(*args: Any, **kwargs: Any) -> None:
    """Not plain either."""


class Number(int):
    """An int subclass: storable, but not plainly (the one-call check decides)."""


TASKS: list[Task[..., Any]] = [
    dispatch_task(task()(plain)),
    dispatch_task(task(takes_context=True)(takes_context)),
    dispatch_task(task()(positional_only)),
    dispatch_task(task()(anything)),
]

CALLS: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
    ((), {}),
    ((1,), {}),
    ((1, 2), {}),
    ((1, 2, 3), {}),
    ((1,), {"k": "x"}),
    ((1,), {"b": 2, "k": [1, {"x": None}]}),
    ((), {"a": 1}),
    ((1,), {"a": 1}),
    ((1,), {"zzz": 1}),
    (("é", "日本", ["nested", ("tuple", 1.5)]), {}),
    (({"key": "value", "n": [True, False, None]},), {}),
    ((math.nan,), {}),
    ((math.inf,), {}),
    (("nul\x00",), {}),
    (("lone \udc80",), {}),
    (({1: "non-str key"},), {}),
    (({"nul\x00key": 1},), {}),
    ((Number(3),), {}),
    ((OrderedDict(a=1),), {}),
    ((object(),), {}),
    (({1, 2},), {}),
    ((b"bytes",), {}),
    (([[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]],), {}),
    (([0] * 50,), {}),
    ((1,), {"k": {"deep": [[["x"] * 3] * 3] * 3}}),
]


def outcome(run: Callable[[], Any]) -> tuple[str, Any, Any]:
    try:
        encoded = run()
    except Exception as exc:  # the error itself is what is compared
        return ("raised", type(exc), str(exc))
    return ("encoded", encoded.text, encoded.value)


def caps(definition: Task[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[int]:
    """A roomy cap and, where the payload encodes, its exact size and a byte less."""
    roomy = 1 << 20
    found = outcome(lambda: encode_arguments(definition, args, kwargs, roomy))
    if found[0] != "encoded":
        return [roomy, 3]
    size = len(found[1].encode())
    return [roomy, size, size - 1]


@pytest.mark.parametrize("definition", TASKS, ids=lambda t: t.func.__name__)
@pytest.mark.parametrize(("args", "kwargs"), CALLS)
def test_the_batch_encoder_decides_as_the_one_call_check(
    definition: Task[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    for cap in caps(definition, args, kwargs):
        one = outcome(lambda cap=cap: encode_arguments(definition, args, kwargs, cap))
        batch = outcome(lambda cap=cap: arguments_encoder(definition, cap)(args, kwargs))
        assert batch == one, (cap, one)


def test_the_checks_ran_both_ways() -> None:
    """Not a vacuous comparison: some calls encode and some are refused, for
    each reason, on the plain task."""
    plain_task = TASKS[0]
    encode = arguments_encoder(plain_task, 1 << 20)
    found = {outcome(lambda call=call: encode(*call))[0] for call in CALLS}
    assert found == {"encoded", "raised"}
    refused = outcome(lambda: arguments_encoder(plain_task, 1 << 20)((math.nan,), {}))
    assert refused[0] == "raised" and "args[0]" in refused[2]
    too_big = outcome(lambda: arguments_encoder(plain_task, 10)(("x" * 20,), {}))
    assert too_big[0] == "raised" and "10" in too_big[2]
    unbound = outcome(lambda: arguments_encoder(plain_task, 1 << 20)((), {}))
    assert unbound[0] == "raised" and "signature" in unbound[2]
