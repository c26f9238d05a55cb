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
        # BENCH_DJ_WHOLE_FILTER_INDEXES=1: the job table's filter indexes whole,
        # as before migration 0015, to measure what it changed (a worker refuses
        # to start with a migration unapplied, so the indexes are rebuilt instead).
        if os.environ.get("BENCH_DJ_WHOLE_FILTER_INDEXES") == "1" and self.name == "dispatch_jobs":
            self._whole_filter_indexes()

    @staticmethod
    def _whole_filter_indexes() -> None:
        from importlib import import_module

        from django.db import connection

        from dispatch_jobs.models import Job

        step = import_module("dispatch_jobs.migrations.0015_finished_filter_indexes")
        with connection.schema_editor(atomic=False) as editor:
            step._rebuild(editor, Job, finished=False)

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
