"""The new project scripts/check_release.sh builds with the installed wheel.

Runs with the clean virtualenv's Python, so it uses the standard library, Django and
what the wheel brought, nothing from the checkout.

    python release_site.py configure SITE   # README's settings, a task module, the database
    python release_site.py result SITE ID   # one line; exit 1 unless the job is SUCCESSFUL
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

# What README.md ("Install in your project") tells a user to add, with the SQLite
# options docs/install.md gives. {databases} is filled from DATABASE_URL; with
# RELEASE_DEFAULT_SQLITE=1 (and no URL) startproject's own SQLite settings stay as they are.
SETTINGS = """

# --- dispatch_jobs, as README.md's "Install in your project" says
INSTALLED_APPS += ["dispatch_jobs", "greetings"]

TASKS = {{
    "default": {{
        "BACKEND": "dispatch_jobs.backend.DispatchBackend",
        "QUEUES": ["default", "emails"],
    }}
}}

{databases}"""

SQLITE = """{
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": BASE_DIR / "db.sqlite3",
        "OPTIONS": {
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        },
    }
}"""

# The README's example job, in an app of the new project.
TASKS_MODULE = """from datetime import timedelta

from dispatch_jobs import task


@task(
    queue_name="emails", max_retries=5, timeout=timedelta(seconds=30), resources={"memory": "256Mi"}
)
def send_welcome(user_id: int) -> str:
    return f"sent {user_id}"
"""


def server_database(url: str) -> dict[str, object]:
    """DATABASES["default"] for a postgres:// or mysql:// URL."""
    parts = urlsplit(url)
    engine = {"postgres": "postgresql", "postgresql": "postgresql", "mysql": "mysql"}.get(
        parts.scheme
    )
    if engine is None:
        raise SystemExit(f"DATABASE_URL: unsupported scheme {parts.scheme!r}")
    config: dict[str, object] = {
        "ENGINE": f"django.db.backends.{engine}",
        "NAME": parts.path.lstrip("/"),
        "USER": unquote(parts.username or ""),
        "PASSWORD": unquote(parts.password or ""),
        "HOST": parts.hostname or "",
        "PORT": str(parts.port or ""),
    }
    if engine == "mysql":
        config["OPTIONS"] = {"charset": "utf8mb4"}
    return config


def recreate_database(config: dict[str, object]) -> None:
    """Drop and create the named database, so every check starts empty."""
    name = str(config["NAME"])
    if not name.replace("_", "").isalnum():
        raise SystemExit(f"DATABASE_URL: database name {name!r} must be letters, digits, _")
    if str(config["ENGINE"]).endswith("postgresql"):
        import psycopg

        with psycopg.connect(
            dbname="postgres",
            user=config["USER"] or None,
            password=config["PASSWORD"] or None,
            host=config["HOST"] or None,
            port=config["PORT"] or None,
            autocommit=True,
        ) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{name}"')
    else:
        import MySQLdb

        kwargs = {"user": config["USER"], "passwd": config["PASSWORD"], "host": config["HOST"]}
        if config["PORT"]:
            kwargs["port"] = int(str(config["PORT"]))
        conn = MySQLdb.connect(**kwargs)
        try:
            cursor = conn.cursor()
            cursor.execute(f"DROP DATABASE IF EXISTS `{name}`")
            cursor.execute(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4")
        finally:
            conn.close()


def configure(site: Path) -> None:
    url = os.environ.get("DATABASE_URL", "")
    if url:
        config = server_database(url)
        recreate_database(config)
        databases = f"DATABASES = {{'default': {config!r}}}\n"
    elif os.environ.get("RELEASE_DEFAULT_SQLITE"):
        databases = ""  # startproject's own DATABASES, untouched
    else:
        databases = f"DATABASES = {SQLITE}\n"
    settings = site / "mysite" / "settings.py"
    settings.write_text(settings.read_text() + SETTINGS.format(databases=databases))
    (site / "greetings" / "tasks.py").write_text(TASKS_MODULE)


def result(site: Path, job_id: str) -> int:
    sys.path.insert(0, str(site))
    os.environ["DJANGO_SETTINGS_MODULE"] = "mysite.settings"
    import django

    django.setup()
    from django.db import connection
    from greetings.tasks import send_welcome

    import dispatch_jobs
    from dispatch_jobs.compat import TaskResultStatus

    origin = Path(dispatch_jobs.__file__).resolve()
    if not origin.is_relative_to(Path(sys.prefix).resolve()):
        print(f"dispatch_jobs was imported from {origin}, not the clean virtualenv")
        return 1
    outcome = send_welcome.get_result(job_id)
    where = f"Django {django.get_version()}, {connection.vendor}"
    if outcome.status != TaskResultStatus.SUCCESSFUL or outcome.return_value != "sent 42":
        errors = "; ".join(e.traceback.strip().splitlines()[-1] for e in outcome.errors)
        print(f"job {job_id} is {outcome.status} on {where} ({errors or 'no error recorded'})")
        return 1
    print(f"startproject job {job_id} SUCCESSFUL on {where}")
    return 0


def main() -> int:
    command, site = sys.argv[1], Path(sys.argv[2])
    if command == "configure":
        configure(site)
        return 0
    if command == "result":
        return result(site, sys.argv[3])
    raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    sys.exit(main())
