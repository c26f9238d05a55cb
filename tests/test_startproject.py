"""The newcomer's path, for real: ``django-admin startproject``, the README's
install settings appended to Django's own ``settings.py``, ``migrate``, a job from
the README enqueued on a queue that is not ``default``, ``runjobs --burst``, and
the job SUCCESSFUL. Every step is a subprocess of the interpreter the suite runs
in (its virtualenv has dispatch_jobs installed, as ``pip install`` would).

SQLite runs with Django's default settings (no OPTIONS): it must work, with one
warning. PostgreSQL and MariaDB run when the suite does (``DATABASE_URL``), each
in a database of its own named after the suite's.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
SUITE_URL = os.environ.get("DATABASE_URL", "")
TIMEOUT = 300

pytestmark = pytest.mark.slow


def readme_block(marker: str) -> str:
    """The README's first ``python`` block containing ``marker``."""
    blocks = re.findall(r"```python\n(.*?)```", README, flags=re.S)
    return next(block for block in blocks if marker in block)


def suite_vendor() -> str:
    scheme = urlparse(SUITE_URL).scheme
    return {"postgres": "postgresql", "postgresql": "postgresql", "mysql": "mysql"}.get(
        scheme, "sqlite"
    )


class Server:
    """The suite's database server, reached with the driver, to create and drop
    the project's own database."""

    def __init__(self, url: str) -> None:
        parts = urlparse(url)
        self.vendor = suite_vendor()
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port
        self.user = unquote(parts.username or "")
        self.password = unquote(parts.password or "")
        self.name = f"{parts.path.lstrip('/') or 'dispatch_jobs'}_startproject"

    def settings(self) -> str:
        engine = {"postgresql": "postgresql", "mysql": "mysql"}[self.vendor]
        config = {
            "ENGINE": f"django.db.backends.{engine}",
            "NAME": self.name,
            "USER": self.user,
            "PASSWORD": self.password,
            "HOST": self.host,
            "PORT": str(self.port or ""),
        }
        if self.vendor == "mysql":
            config["OPTIONS"] = {"charset": "utf8mb4"}  # docs/install.md: a utf8mb4 database
        return f"DATABASES = {{'default': {config!r}}}\n"

    def recreate(self, drop_only: bool = False) -> None:
        if self.vendor == "postgresql":
            import psycopg

            kwargs = {"host": self.host, "user": self.user, "dbname": "postgres"}
            if self.port:
                kwargs["port"] = self.port
            if self.password:
                kwargs["password"] = self.password
            with psycopg.connect(**kwargs, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')
                if not drop_only:
                    conn.execute(f'CREATE DATABASE "{self.name}"')
        else:
            import MySQLdb

            conn = MySQLdb.connect(
                host=self.host, port=self.port or 3306, user=self.user, passwd=self.password
            )
            try:
                cursor = conn.cursor()
                cursor.execute(f"DROP DATABASE IF EXISTS `{self.name}`")
                if not drop_only:
                    cursor.execute(f"CREATE DATABASE `{self.name}` CHARACTER SET utf8mb4")
            finally:
                conn.close()


class Project:
    """A project made by ``django-admin startproject`` in ``directory``."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.env = {
            key: value
            for key, value in os.environ.items()
            if key not in ("DJANGO_SETTINGS_MODULE", "DATABASE_URL", "PYTHONPATH")
            and not key.startswith("DISPATCH_")
        }

    def start(self) -> None:
        admin = Path(sys.executable).with_name("django-admin")
        command = [str(admin)] if admin.exists() else [sys.executable, "-m", "django"]
        self.run(*command, "startproject", "mysite", str(self.directory))

    def manage(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.run(sys.executable, "manage.py", *args, check=check)

    def run(self, *command: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            command,
            cwd=self.directory,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"{command} exited {done.returncode}:\n{done.stdout}{done.stderr}")
        return done

    def add_settings(self, text: str) -> None:
        with open(self.directory / "mysite" / "settings.py", "a") as settings:
            settings.write("\n" + text)

    def add_module(self, path: str, text: str) -> None:
        target = self.directory / path
        target.parent.mkdir(parents=True, exist_ok=True)
        (target.parent / "__init__.py").touch()
        target.write_text(text)


@pytest.fixture(params=["sqlite", "postgresql", "mysql"])
def database(request: pytest.FixtureRequest) -> Iterator[Server | None]:
    """None for SQLite (Django's default settings), else the suite's server."""
    if request.param == "sqlite":
        yield None
        return
    if suite_vendor() != request.param:
        pytest.skip(f"needs DATABASE_URL naming a {request.param} server (run by that suite)")
    server = Server(SUITE_URL)
    server.recreate()
    try:
        yield server
    finally:
        server.recreate(drop_only=True)


def test_startproject_readme_migrate_enqueue_runjobs(tmp_path: Path, database: Server | None):
    project = Project(tmp_path)
    project.start()
    # "Install in your project": the app, then TASKS exactly as the README shows it.
    assert '"dispatch_jobs"]' in readme_block("INSTALLED_APPS")
    project.add_settings('INSTALLED_APPS += ["dispatch_jobs"]\n' + readme_block("TASKS = {"))
    if database is not None:
        project.add_settings(database.settings())
    # The README's task, on the "emails" queue (the enqueue lines stay out of the module).
    task_code = readme_block("def send_welcome").split("\nresult = ")[0]
    assert 'queue_name="emails"' in task_code
    project.add_module("shop/tasks.py", task_code)

    # Before migrate, runjobs says what to do in one line (it does not retry forever).
    early = project.manage("runjobs", "--burst", check=False)
    assert early.returncode == 1
    assert "run `python manage.py migrate` first" in early.stderr

    migrate = project.manage("migrate", "--noinput")
    checks = migrate.stdout + migrate.stderr
    assert "ERRORS" not in checks
    if database is None:
        # Django's default SQLite: one warning, printed once, its hint the docs' OPTIONS.
        assert re.findall(r"\(dispatch_jobs\.\w+\)", checks) == ["(dispatch_jobs.W002)"]
        assert "'transaction_mode': 'IMMEDIATE', 'timeout': 20" in checks
    else:
        assert "(dispatch_jobs." not in checks, checks

    enqueued = project.manage(
        "shell",
        "-c",
        textwrap.dedent(
            """
            import json
            from shop.tasks import send_welcome
            first = send_welcome.enqueue(42)
            second = send_welcome.using(priority=10).enqueue(7)
            print(json.dumps([first.id, second.id, first.task.queue_name]))
            """
        ),
    )
    ids = json.loads(enqueued.stdout.strip().splitlines()[-1])
    assert ids[2] == "emails"

    worker = project.manage("runjobs", "--burst")
    log = worker.stderr
    assert "serving queues default, emails (from TASKS['default']['QUEUES'])" in log, log
    for job_id in ids[:2]:
        assert f"Job {job_id} shop.tasks.send_welcome completed in " in log, log

    results = project.manage(
        "shell",
        "-c",
        textwrap.dedent(
            f"""
            import json
            from shop.tasks import send_welcome
            results = [send_welcome.get_result(str(job_id)) for job_id in {ids[:2]!r}]
            print(json.dumps([[str(r.status), r.return_value] for r in results]))
            """
        ),
    )
    outcome = json.loads(results.stdout.strip().splitlines()[-1])
    assert [status.rsplit(".", 1)[-1] for status, _ in outcome] == ["SUCCESSFUL", "SUCCESSFUL"]
    assert [value for _, value in outcome] == ["sent", "sent"]
