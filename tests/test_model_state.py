"""The migrations describe the models as they are: a model change without its
migration (the decoder of a JSON column, say, which changes no SQL) would leave
``makemigrations`` something to write in every project that installs the app."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command


@pytest.mark.django_db  # makemigrations reads the applied migrations' table
def test_the_migrations_hold_every_model_change() -> None:
    out = StringIO()
    try:
        call_command("makemigrations", "dispatch_jobs", "--check", "--dry-run", stdout=out)
    except SystemExit as exc:  # --check exits 1 when a migration is missing
        raise AssertionError(f"a model change has no migration:\n{out.getvalue()}") from exc
