"""Resource quantities, custom-key encoding, and the claim's fit semantics in Python."""

from __future__ import annotations

import pytest

from dispatch_jobs.exceptions import InvalidResources
from dispatch_jobs.resources import (
    check_custom_key_count,
    check_quantity,
    decode_custom_keys,
    default_limits,
    encode_custom_keys,
    fits,
    parse_budget_text,
    parse_quantity,
    parse_resources,
)


@pytest.mark.parametrize(
    ("key", "value", "canonical"),
    [
        ("cpu", 2, 2000),
        ("cpu", "500m", 500),
        ("cpu", "0.5", 500),
        ("gpu", 1, 1000),
        ("gpu", "250m", 250),
        ("memory", "2Gi", 2 * 2**30),
        ("memory", "512Mi", 512 * 2**20),
        ("memory", "1G", 10**9),
        ("memory", 1024, 1024),
        ("disk", "10Ki", 10240),
        ("fpga", 2, 2),
    ],
)
def test_parse_quantity_to_canonical_units(key: str, value: object, canonical: int) -> None:
    assert parse_quantity(key, value) == canonical


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("cpu", "2Gi", "unknown unit"),
        ("memory", "5m", "unknown unit"),  # milli-bytes are refused
        ("memory", "1.5", "finer than"),
        ("cpu", "0.0001", "finer than"),
        ("memory", True, "expected a number"),
        ("memory", "lots", "cannot read"),
        ("fpga", "2Gi", "whole count"),
        ("FPGA", 1, "not valid"),
    ],
)
def test_parse_quantity_refuses_bad_values(key: str, value: object, message: str) -> None:
    with pytest.raises(InvalidResources, match=message):
        parse_quantity(key, value)


def test_parse_resources_and_budget_text() -> None:
    assert parse_resources({"cpu": "1", "memory": "1Ki"}) == {"cpu": 1000, "memory": 1024}
    assert parse_resources(None) == {}
    assert parse_budget_text("cpu=4, memory=8Gi,fpga=1") == {
        "cpu": 4000,
        "memory": 8 * 2**30,
        "fpga": 1,
    }
    with pytest.raises(InvalidResources, match="key=quantity"):
        parse_budget_text("cpu")
    with pytest.raises(InvalidResources, match="mapping"):
        parse_resources(["cpu"])  # type: ignore[arg-type]


def test_custom_keys_encode_with_outer_separators() -> None:
    assert encode_custom_keys(["tpu", "fpga", "tpu"]) == ",fpga,tpu,"
    assert encode_custom_keys([]) == ""
    assert decode_custom_keys(",fpga,tpu,") == ["fpga", "tpu"]
    assert ",fpga," not in encode_custom_keys(["fpga-large"])


def test_default_limits_follow_incompressible_requests() -> None:
    assert default_limits({"cpu": 500, "memory": 10}, {}) == {"memory": 10}
    assert default_limits({"memory": 10}, {"memory": 20}) == {"memory": 20}


def test_fits_matches_the_claim_rules() -> None:
    assert fits({"gpu": 1000}, {"memory": 10})  # absent key is unconstrained
    assert not fits({"memory": 1}, {"memory": 0})  # present zero is a limit
    assert fits({"memory": 10}, {"memory": 10})  # <=
    assert not fits({"fpga": 1}, {"fpga-large": 1})
    assert fits({"fpga": 1, "tpu": 1}, {"fpga": 0, "nvme": 1, "tpu": 0})


# --- bounds (dispatch_jobs.limits)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("memory", 2**80),
        ("memory", "8Pi"),
        ("disk", "1" * 10_000),
        ("cpu", 10**13),
        ("gpu", "9007199254740992m"),
        ("fpga", 2**53),
    ],
)
def test_quantity_over_the_maximum_is_refused_naming_the_key(key, value):
    with pytest.raises(InvalidResources) as excinfo:
        parse_quantity(key, value)
    message = str(excinfo.value)
    assert f"Resource {key!r}" in message
    assert "over the maximum of 9007199254740991 (2**53 - 1)" in message
    assert len(message) < 200  # a 10,000-digit quantity is not echoed whole


def test_the_maximum_itself_parses():
    assert parse_quantity("memory", 2**53 - 1) == 2**53 - 1
    assert parse_quantity("fpga", 2**53 - 1) == 2**53 - 1


@pytest.mark.parametrize(
    ("key", "fragment"),
    [
        ("k" * 61, "at most 60 characters"),
        ("k" * 10_000, "at most 60 characters"),
        ("a,b", "joined by ','"),
        ("a\x00b", "is not valid"),
        ("Upper", "is not valid"),
    ],
)
def test_custom_key_out_of_bounds(key, fragment):
    with pytest.raises(InvalidResources) as excinfo:
        parse_resources({key: 1})
    assert fragment in str(excinfo.value)
    assert len(str(excinfo.value)) < 300


def test_custom_key_count():
    check_custom_key_count({f"k{i}": 1 for i in range(8)} | {"memory": 1, "cpu": 1})
    with pytest.raises(InvalidResources, match="9 custom resource keys .* at most 8"):
        check_custom_key_count({f"k{i}": 1 for i in range(9)})


def test_eight_longest_custom_keys_fit_the_column():
    keys = [f"{'k' * 59}{i}" for i in range(8)]
    assert len(encode_custom_keys(keys)) <= 500


def test_canonical_quantity_check():
    check_quantity("memory", 0)
    check_quantity("memory", 2**53 - 1)
    for amount in (-1, 2**53, True, 1.5, "1"):
        with pytest.raises(InvalidResources, match="Resource 'memory'"):
            check_quantity("memory", amount)
