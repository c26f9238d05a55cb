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
        ([math.nan], "NaN at [0]"),
        ({"a": [1, math.inf]}, "Infinity at ['a'][1]"),
        ([-math.inf], "-Infinity at [0]"),
        (["ok", "a\x00b"], "a string that contains a NUL character (\\x00) at [1]"),
        (
            {"k": "\ud83d"},
            "a string that contains a lone surrogate (not encodable as UTF-8) at ['k']",
        ),
        ({"a\x00": 1}, "a key that contains a NUL character (\\x00) at the top"),
        ("\x00", "a string that contains a NUL character (\\x00) at the top"),
        (math.nan, "NaN at the top"),
    ],
)
def test_unstorable_values_name_the_path(value, reason):
    assert find_unstorable(value) == reason


def test_other_types_are_judged_only_when_asked():
    """A worker normalises a return value itself (tuples, mappings); enqueue takes
    JSON values only."""
    for value, reason in (
        ({"x": {1: 2}}, "a key of type int at ['x']"),
        ([{1, 2}], "a value of type set at [0]"),
    ):
        assert find_unstorable(value) is None
        assert find_unstorable(value, json_only=True) == reason


@pytest.mark.parametrize(
    ("value", "sentence"),
    [
        ([math.nan], "args[0] is float nan, which JSON cannot represent"),
        (
            [{"n": "a\x00"}],
            "args[0]['n'] contains a NUL character (\\x00), which PostgreSQL cannot store",
        ),
        (
            ["\udc80"],
            "args[0] contains a lone surrogate ('\\udc80'), which cannot be encoded as UTF-8",
        ),
        ([{"k\x00": 1}], "args[0] key 'k\\x00' contains a NUL character (\\x00)"),
        ([{1: 1}], "args[0] key 1 is int, which is not a str (JSON keys are strings)"),
        ([object], "args[0] is type <class 'object'>, which is not JSON-serialisable"),
    ],
)
def test_the_sentence_form_reads_as_an_error_about_that_place(value, sentence):
    found = locate_unstorable(value, root="args", json_only=True)
    assert found is not None and found.sentence().startswith(sentence), found


def test_root_prefixes_the_path():
    assert find_unstorable([1, math.nan], root="return value") == "NaN at return value[1]"


def test_the_first_culprit_in_document_order_is_named():
    found = locate_unstorable([1, {"b": math.nan, "a": "\x00"}, "\x00"])
    assert found == Unstorable("[1]['b']", "NaN", "is float nan, which JSON cannot represent")


def test_depth_is_counted_in_lists_and_dicts():
    assert find_unstorable([[1]], max_depth=2) is None
    assert find_unstorable([[[1]]], max_depth=2) == "nesting deeper than 2 levels at [0][0]"
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
    assert find_unstorable(value, max_items=1000) == "more than 1000 values at the top"
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
    assert storable_text("abcdef", limit=3) == "abc\n… [3 more characters not stored]"
