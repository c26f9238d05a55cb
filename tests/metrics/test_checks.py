"""The metrics settings' system checks, one test per id."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import override_settings

from dispatch_jobs.checks import check_metrics_settings


def ids_for(dispatch_jobs: Any) -> set[str]:
    with override_settings(DISPATCH_JOBS=dispatch_jobs):
        return {message.id for message in check_metrics_settings()}


def test_defaults_and_good_values_pass() -> None:
    assert ids_for({}) == set()
    assert ids_for({"METRICS_TOKEN": "x" * 16, "METRICS_COUNT_CAP": 1}) == set()


@pytest.mark.parametrize("token", ["short", 12345, None, b"x" * 32])
def test_e060_the_token_is_a_long_enough_string(token: object) -> None:
    assert ids_for({"METRICS_TOKEN": token}) == {"dispatch_jobs.E060"}


@pytest.mark.parametrize("cap", [0, -1, "100", True, 1.5])
def test_e061_the_count_cap_is_a_positive_integer(cap: object) -> None:
    assert ids_for({"METRICS_COUNT_CAP": cap}) == {"dispatch_jobs.E061"}
