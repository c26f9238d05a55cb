"""The worker suite's process fixtures, for the real-worker input tests."""

from tests.worker.conftest import pytest_runtest_makereport, workers  # noqa: F401
