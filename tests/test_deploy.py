"""The deployment examples (docs/deploy/) are checked, not just shown: the systemd
unit passes ``systemd-analyze verify``, every ``runjobs`` command line in them is
accepted by the real command, and every stop timeout outlasts the shutdown grace."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from dispatch_jobs.management.commands.runjobs import Command
from dispatch_jobs.worker.config import build_config, parse_duration

DEPLOY = Path(__file__).resolve().parents[1] / "docs" / "deploy"
UNIT = DEPLOY / "runjobs@.service"
COMPOSE = DEPLOY / "compose.yaml"


def unit_values(key: str) -> list[str]:
    return re.findall(rf"^{key}=(.*)$", UNIT.read_text(), re.MULTILINE)


def runjobs_config(argv: list[str]):
    """What the real ``runjobs`` makes of these arguments (raises if it refuses them)."""
    options = vars(Command().create_parser("manage.py", "runjobs").parse_args(argv))
    return build_config(options)


def systemd_seconds(value: str) -> float:
    """The unit's time spans used here: ``90``, ``90s``, ``2min``."""
    match = re.fullmatch(r"(\d+)\s*(s|min)?", value.strip())
    assert match, f"unexpected time span {value!r}"
    return int(match.group(1)) * (60 if match.group(2) == "min" else 1)


def test_the_systemd_unit_verifies(tmp_path):
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed (Debian: the systemd package)")
    # An instance of the template, with paths that exist on this machine: verify
    # checks that ExecStart is executable and WorkingDirectory is usable.
    text = UNIT.read_text()
    text = text.replace("/srv/app/.venv/bin/python", str(Path(sys.executable).resolve()))
    text = text.replace("WorkingDirectory=/srv/app", f"WorkingDirectory={tmp_path}")
    text = re.sub(r"^(User|Group)=app$", r"\1=root", text, flags=re.MULTILINE)
    instance = tmp_path / "runjobs@default.service"
    instance.write_text(text)
    done = subprocess.run(
        [analyze, "verify", str(instance)], capture_output=True, text=True, timeout=60
    )
    # verify exits 0 on unknown keys and unparsable values, and only prints them.
    assert done.returncode == 0 and done.stdout + done.stderr == "", done.stdout + done.stderr


def test_the_unit_runs_runjobs_with_arguments_it_accepts():
    [exec_start] = unit_values("ExecStart")
    argv = shlex.split(exec_start)
    assert argv[1:3] == ["manage.py", "runjobs"]
    default_args = next(v for v in unit_values("Environment") if v.startswith("RUNJOBS_ARGS="))
    args = [a for a in argv[3:] if a != "$RUNJOBS_ARGS"]
    args += shlex.split(default_args.partition("=")[2].replace("%i", "default"))
    config = runjobs_config(args)
    assert config.queues == ("default",)
    # systemd must wait out the drain, and the final writes after it.
    [timeout] = unit_values("TimeoutStopSec")
    assert systemd_seconds(timeout) >= config.shutdown_grace.total_seconds() + 15


def test_every_compose_worker_stops_after_its_drain():
    import yaml

    services = yaml.safe_load(COMPOSE.read_text())["services"]
    workers = {name: s for name, s in services.items() if "runjobs" in s.get("command", [])}
    assert workers
    for name, service in workers.items():
        argv = service["command"]
        assert argv[:3] == ["python", "manage.py", "runjobs"], name
        config = runjobs_config(argv[3:])
        grace = parse_duration("stop_grace_period", service["stop_grace_period"])
        assert grace >= config.shutdown_grace + timedelta(seconds=15), name
        assert service.get("init") is True and service.get("stop_signal") == "SIGTERM", name
