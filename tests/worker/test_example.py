"""The example project for real: demo jobs and a worker on SQLite, every state shown."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from tests.worker.processes import ROOT, wait_until

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        connection.vendor != "sqlite",
        reason="the example project runs on SQLite; it is checked once, in the SQLite run",
    ),
]

STATES = """
import django, json
django.setup()
from dispatch_jobs.models import Job
print(json.dumps({j.name.rsplit(".", 1)[-1] + ":" + str(j.pk): j.state
                  for j in Job.objects.all()}))
"""


def test_demo_jobs_reach_every_state_within_a_minute(tmp_path: Path):
    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE="example_project.settings",
        DATABASE_URL=f"sqlite:///{tmp_path / 'example.sqlite3'}",
        PYTHONPATH=str(ROOT),
    )

    def manage(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        )
        return done.stdout

    def states() -> dict[str, str]:
        out = subprocess.run(
            [sys.executable, "-c", STATES],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout
        return json.loads(out)

    manage("migrate", "--noinput", "-v", "0")
    assert "Enqueued 11 demo jobs" in manage("enqueue_demo_jobs")
    log = open(tmp_path / "worker.log", "wb")  # noqa: SIM115
    worker = subprocess.Popen(
        [
            sys.executable,
            "manage.py",
            "runjobs",
            "--queue",
            "default,emails,reports",
            "--heartbeat",
            "0.5",
            "--lease-ttl",
            "2",
            "--shutdown-grace",
            "0",
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:

        def shown() -> set[str]:
            current = states()
            return set(current.values()) if _settled(current) else set()

        wait_until(
            lambda: {"completed", "failed", "running", "pending"} <= shown(),
            timeout=60,
            what="every demo outcome",
        )
    finally:
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(60) == 0
        log.close()
    final = states()
    by_name = {key.split(":")[0]: state for key, state in final.items()}
    assert by_name["sync_inventory"] == "completed"
    assert by_name["charge_card"] == "failed"
    assert by_name["build_report"] == "failed"
    assert by_name["nightly_export"] == "pending"  # handed back by the drain


def _settled(current: dict[str, str]) -> bool:
    """The retrying demo has succeeded and the timing-out one has failed for good."""
    by_name = {key.split(":")[0]: state for key, state in current.items()}
    return by_name.get("sync_inventory") == "completed" and by_name.get("build_report") == "failed"
