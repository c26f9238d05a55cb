"""Shared plumbing for the Django-based systems: settings, migrate, probes."""

from __future__ import annotations

import os

from .base import System

SETTINGS = "bench.django_project.settings"


class DjangoSystem(System):
    """A system living in the bench's Django project (``bench/django_project``)."""

    def __init__(self, vendor: str) -> None:
        super().__init__(vendor)
        os.environ["BENCH_SYSTEM"] = self.name
        os.environ["BENCH_DATABASE_URL"] = self.url
        os.environ["DJANGO_SETTINGS_MODULE"] = SETTINGS
        import django

        django.setup()

    def prepare(self) -> None:
        from django.core.management import call_command

        from ..databases import fresh_database

        self.close()
        fresh_database(self.url)
        call_command("migrate", verbosity=0, interactive=False)
        # BENCH_DJ_MIGRATION=0014 (say): dispatch_jobs' tables as that migration
        # left them, to measure what a later one changed (an index set, say).
        target = os.environ.get("BENCH_DJ_MIGRATION", "")
        if target and self.name == "dispatch_jobs":
            call_command("migrate", "dispatch_jobs", target, verbosity=0, interactive=False)

    def close(self) -> None:
        from django.db import connections

        connections.close_all()

    def worker_env(self, mode: str) -> dict[str, str]:
        env = super().worker_env(mode)
        env["BENCH_SYSTEM"] = self.name
        env["BENCH_DATABASE_URL"] = self.url
        env["DJANGO_SETTINGS_MODULE"] = SETTINGS
        env.pop("BENCH_CONN_MAX_AGE", None)
        return env

    def manage(self, *args: str) -> list[str]:
        return [self.python(), "-m", "django", *args]

    def scalar(self, sql: str, params: tuple[object, ...] = ()) -> object:
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            row = cursor.fetchone()
        return row[0] if row else None
