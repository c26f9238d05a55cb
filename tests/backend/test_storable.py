"""The storable-value walker on its own: what it refuses, where it says it is,
and that it finishes on values that would recurse or explode."""

from __future__ import annotations

import math
from collections import OrderedDict
from enum import IntEnum
from typing import Any

import pytest

from dispatch_jobs.limits import JSON_MAX_DEPTH
from dispatch_jobs.storable import (
    Unstorable,
    check_storable_text,
    find_unstorable,
    locate_unstorable,
    storable_text,
)


class Level(IntEnum):
    LOW = 1


def nested(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth - 1):
        value = [value]
    return value


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        0,
        2**100,  # big integers are JSON numbers every database stores
        1.5,
        "",
        "é 🎉 ключ",
        [],
        {},
        (1, "a", None),
        {"a": [1, {"b": [True, 2.5, "x"]}]},
        nested(JSON_MAX_DEPTH),
        OrderedDict(a=1),  # subclasses of JSON types encode as their base
        [Level.LOW],
    ],
)
def test_storable_values(value):
    assert find_unstorable(value) is None


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ([math.nan], "[0] is float nan, which JSON cannot represent"),
        ({"a": [1, math.inf]}, "['a'][1] is float inf, which JSON cannot represent"),
        ([-math.inf], "[0] is float -inf"),
        (["ok", "a\x00b"], "[1] contains a NUL character (\\x00), which PostgreSQL cannot store"),
        ({"k": "\ud83d"}, "['k'] contains a lone surrogate ('\\ud83d')"),
        ({"a\x00": 1}, "key 'a\\x00' contains a NUL character"),
        ({"x": {1: 2}}, "['x'] key 1 is int, which is not a str (JSON keys are strings)"),
        ([{1, 2}], "[0] is set {1, 2}, which is not JSON-serialisable"),
        ("\x00", "the value contains a NUL character"),
        (math.nan, "the value is float nan"),
    ],
)
def test_unstorable_values_name_the_path(value, reason):
    found = find_unstorable(value)
    assert found is not None and found.startswith(reason), found


def test_root_prefixes_the_path():
    assert find_unstorable([1, math.nan], root="return value") == (
        "return value[1] is float nan, which JSON cannot represent"
    )


def test_the_first_culprit_in_document_order_is_named():
    found = locate_unstorable([1, {"b": math.nan, "a": "\x00"}, "\x00"])
    assert found == Unstorable("[1]['b']", "is float nan, which JSON cannot represent")


def test_depth_is_counted_in_lists_and_dicts():
    assert find_unstorable([[1]], max_depth=2) is None
    assert find_unstorable([[[1]]], max_depth=2) == (
        "[0][0] nests lists or dicts deeper than 2 levels, more than a JSON column stores "
        "on every database"
    )
    assert find_unstorable({"a": {"b": {}}}, max_depth=2) is not None


def test_ten_thousand_levels_give_a_reason_not_a_recursion_error():
    assert "deeper than 31 levels" in str(find_unstorable(nested(10_000)))


def test_a_cycle_is_caught_by_the_depth_bound():
    cycle: list[Any] = []
    cycle.append(cycle)
    assert "deeper than" in str(find_unstorable(cycle))


def test_shared_sub_lists_are_counted_each_time_and_bounded():
    value: list[Any] = []
    for _ in range(25):  # 2**25 values as JSON
        value = [value, value]
    assert find_unstorable(value, max_items=1000) == "the value holds more than 1000 values"
    assert find_unstorable(list(range(1000)), max_items=1001) is None


def test_long_keys_are_shortened_in_the_path():
    reason = find_unstorable({"k" * 10_000 + "\x00": 1})
    assert reason is not None and len(reason) < 200


def test_plain_text():
    assert check_storable_text("fine é") is None
    assert check_storable_text("a\x00") == (
        "contains a NUL character (\\x00), which PostgreSQL cannot store"
    )
    assert check_storable_text("\udc80") == (
        "contains a lone surrogate ('\\udc80'), which cannot be encoded as UTF-8"
    )


def test_storable_text_escapes_what_cannot_be_stored():
    assert storable_text("plain é") == "plain é"
    assert storable_text("a\x00b\ud800c") == "a\\x00b\\ud800c"
    assert check_storable_text(storable_text("x\x00\udfff")) is None
