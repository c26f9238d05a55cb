"""The index diet: each state change writes fewer of the job table's indexes
(docs/performance.md, "The job table's indexes").

- PostgreSQL and SQLite: ``dj_job_completed_id`` only holds rows with a finish
  time (``WHERE completed_at IS NOT NULL``). Every reader compares
  ``completed_at`` (the admin's finished sort and filter, the rollup, the purge),
  which implies the condition; an enqueue, a claim and a retry no longer write it.
- PostgreSQL: ``dj_job_name_id`` takes the pattern operator class, so it serves
  the exact name (the admin's task filter) and the name prefix (``LIKE 'x%'``,
  the store's listing) at once; ``dj_job_name_pattern`` (migration 0003) goes.
  On PostgreSQL every claim and completion writes every index that is not
  partial (the state changes, so no update is HOT): one index fewer is one
  entry fewer per state change.
- MariaDB/MySQL: ``dj_job_suspect`` becomes ``(quarantine)``. InnoDB writes a
  secondary index only when one of its columns changes; with ``state`` in it
  (migration 0004) every claim and completion wrote it, without it only a change
  of suspicion does. The suspect probe (``quarantine = 1``: a few live rows)
  seeks it all the same. MariaDB has no partial indexes: Django builds
  ``dj_job_completed_id`` there plain, as before, and so it is left alone.
"""

from django.db import migrations, models
from django.db.models import Q

COMPLETED_OLD = models.Index(fields=["completed_at", "id"], name="dj_job_completed_id")
COMPLETED_NEW = models.Index(
    fields=["completed_at", "id"],
    name="dj_job_completed_id",
    condition=Q(completed_at__isnull=False),
)
NAME_OLD = models.Index(fields=["name", "-id"], name="dj_job_name_id")
NAME_NEW = models.Index(
    fields=["name", "-id"],
    name="dj_job_name_id",
    opclasses=["varchar_pattern_ops", "int8_ops"],
)
NAME_PATTERN = "dj_job_name_pattern"
SUSPECT = {False: "quarantine, state", True: "quarantine"}  # by "after the diet"


def _set(schema_editor, model, dieted: bool) -> None:
    """The indexes as after the diet (``dieted``) or as before it, from the other."""
    vendor = schema_editor.connection.vendor
    table = model._meta.db_table
    swaps = []
    if vendor in ("postgresql", "sqlite"):
        swaps.append((COMPLETED_OLD, COMPLETED_NEW))
    if vendor == "postgresql":
        swaps.append((NAME_OLD, NAME_NEW))
    for before, after in swaps:
        schema_editor.remove_index(model, before if dieted else after)
        schema_editor.add_index(model, after if dieted else before)
    if vendor == "postgresql" and dieted:
        schema_editor.execute(f"DROP INDEX IF EXISTS {NAME_PATTERN}")
    elif vendor == "postgresql":
        schema_editor.execute(f"CREATE INDEX {NAME_PATTERN} ON {table} (name varchar_pattern_ops)")
    if vendor == "mysql":
        schema_editor.execute(f"DROP INDEX dj_job_suspect ON {table}")
        schema_editor.execute(f"CREATE INDEX dj_job_suspect ON {table} ({SUSPECT[dieted]})")


def diet(apps, schema_editor):
    _set(schema_editor, apps.get_model("dispatch_jobs", "Job"), dieted=True)


def undo(apps, schema_editor):
    _set(schema_editor, apps.get_model("dispatch_jobs", "Job"), dieted=False)


class Migration(migrations.Migration):
    atomic = False  # MariaDB cannot run DDL inside a transaction
    dependencies = [("dispatch_jobs", "0009_cancel_request")]
    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveIndex(model_name="job", name="dj_job_completed_id"),
                migrations.AddIndex(model_name="job", index=COMPLETED_NEW),
                migrations.RemoveIndex(model_name="job", name="dj_job_name_id"),
                migrations.AddIndex(model_name="job", index=NAME_NEW),
            ],
            database_operations=[migrations.RunPython(diet, undo)],
        )
    ]
