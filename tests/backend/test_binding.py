"""The argument-binding check's shortcut decides exactly as ``Signature.bind``.

Enqueue checks that the arguments bind to the task's signature. For plain
signatures it decides without ``Signature.bind`` (which costs more than every
other argument check together); any other signature, and every failure, still
goes through ``bind`` for its message. Here the shortcut is compared with
``bind`` over every call shape up to a size, for a range of signatures.
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Callable
from typing import Any

import pytest

from dispatch_jobs.validation import _plain_parameters

PLAIN = [
    "()",
    "(a)",
    "(a, b)",
    "(a, b=1)",
    "(a=1, b=2)",
    "(a, *, k)",
    "(a, *, k=1)",
    "(*, k)",
    "(*, k=1)",
    "(context, a, b=1)",
    "(a, b=1, *, k, m=2)",
]
OTHER = ["(a, /)", "(a, /, b)", "(*args)", "(a, *args)", "(**kwargs)", "(a, *, k, **kwargs)"]
KEYWORDS = ["a", "b", "k", "m", "context", "x"]


def function(parameters: str) -> Callable[..., Any]:
    namespace: dict[str, Any] = {}
    exec(f"def f{parameters}: pass", namespace)
    return namespace["f"]


def binds(func: Callable[..., Any], count: int, keywords: dict[str, Any]) -> bool:
    try:
        inspect.signature(func).bind(*range(count), **keywords)
    except TypeError:
        return False
    return True


@pytest.mark.parametrize("parameters", PLAIN)
def test_the_shortcut_agrees_with_bind_on_every_call_shape(parameters: str) -> None:
    func = function(parameters)
    plain = _plain_parameters(func)
    assert plain is not None
    for count in range(5):
        for size in range(len(KEYWORDS) + 1):
            for names in itertools.combinations(KEYWORDS, size):
                keywords = dict.fromkeys(names, 0)
                assert plain.binds(count, keywords) == binds(func, count, keywords), (
                    parameters,
                    count,
                    names,
                )


@pytest.mark.parametrize("parameters", OTHER)
def test_other_signatures_are_left_to_bind(parameters: str) -> None:
    assert _plain_parameters(function(parameters)) is None


def test_an_unhashable_callable_is_left_to_bind() -> None:
    class Unhashable:
        __hash__ = None  # type: ignore[assignment]

        def __call__(self, a: int) -> None: ...

    assert _plain_parameters(Unhashable()) is None
