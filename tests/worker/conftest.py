"""Fixtures of the worker suite."""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from pathlib import Path

import pytest

from tests.worker.processes import WorkerProcess


@pytest.fixture
def workers(
    tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Callable[..., WorkerProcess]]:
    """Start ``runjobs`` processes; every one is killed at the end of the test
    (before the database is flushed), and their logs are shown on failure."""
    started: list[WorkerProcess] = []

    def start(*args: str, env: dict[str, str] | None = None) -> WorkerProcess:
        worker = WorkerProcess(tmp_path, *args, env=env)
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.stop()
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        for worker in started:
            print(f"--- {worker.log_path.name} (pid {worker.pid}) ---\n{worker.log()[-6000:]}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.when == "call":
        item.rep_call = report  # type: ignore[attr-defined]
    return report
