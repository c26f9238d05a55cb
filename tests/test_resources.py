"""Resource quantities, custom-key encoding, and the claim's fit semantics in Python."""

from __future__ import annotations

import pytest

from dispatch_jobs.exceptions import InvalidResources
from dispatch_jobs.resources import (
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
