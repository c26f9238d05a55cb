"""One virtual environment per system under ``bench/.venvs/`` (gitignored).

Peers are installed from PyPI at pinned versions so a rerun measures the same
code; dispatch_jobs is installed from this repository (editable). A stamp file
holds the requirement list a venv was built from, so a changed pin rebuilds it
and an unchanged one costs nothing.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENVS = ROOT / "bench" / ".venvs"

# What each venv holds. psycopg[binary] is in every one: the harness probes
# PostgreSQL with it. typer is pinned below 0.25 for PgQueuer 1.6: with newer
# typer its CLI passes the --log-level default as a plain string and crashes.
REQUIREMENTS: dict[str, list[str]] = {
    "dispatch_jobs": ["-e", f"{ROOT}[postgres,mysql]", "py-spy>=0.4"],
    "django_tasks_db": ["django-tasks-db==0.13.0", "Django>=6.0,<6.2", "psycopg[binary]>=3.2"],
    "procrastinate": ["procrastinate==3.10.0", "psycopg[binary]>=3.2"],
    "pgqueuer": ["pgqueuer[asyncpg]==1.6.0", "typer==0.24.2", "psycopg[binary]>=3.2"],
}


def python_of(system: str) -> Path:
    return VENVS / system / "bin" / "python"


def ensure(system: str, python: str, log: Path) -> Path:
    """Create or refresh ``system``'s venv; returns its interpreter."""
    venv = VENVS / system
    stamp = venv / ".bench-installed"
    want = hashlib.sha1(" ".join(REQUIREMENTS[system]).encode()).hexdigest()
    if python_of(system).exists() and stamp.exists() and stamp.read_text() == want:
        return python_of(system)
    print(f"  installing {system} into {venv.relative_to(ROOT)} ...", flush=True)
    if venv.exists():
        shutil.rmtree(venv)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        subprocess.run([python, "-m", "venv", str(venv)], check=True, stdout=out, stderr=out)
        pip = [str(python_of(system)), "-m", "pip", "install", "--disable-pip-version-check"]
        subprocess.run([*pip, "-q", "--upgrade", "pip"], stdout=out, stderr=out)
        done = subprocess.run([*pip, *REQUIREMENTS[system]], stdout=out, stderr=out)
    if done.returncode != 0:
        sys.exit(f"installing {system} failed; see {log}")
    stamp.write_text(want)
    return python_of(system)
