"""MariaDB/MySQL: one claim index and one reclaim index, not two of each.

Django builds the model's partial indexes ``dj_job_ready`` and ``dj_job_lease`` on
MariaDB too, without their condition (``models.W037``): plain indexes on
``(queue, priority DESC, run_at, id)`` and ``(lease_expires_at)`` that every
finished row also enters. Migration 0002 added the state-first twins that serve
the claim and the reclaim there (``dj_job_ready_my``, ``dj_job_lease_my``), so
each write paid for both. Drop Django's plain pair and give the twins the model's
names: the migration state keeps describing indexes that exist, and a later
``RemoveIndex``/``RenameIndex`` of ``dj_job_ready`` acts on the one that serves.
"""

from django.db import migrations

# The model's name → the state-first twin 0002 created, and what Django had built.
INDEXES = {
    "dj_job_ready": ("dj_job_ready_my", "queue, priority DESC, run_at, id"),
    "dj_job_lease": ("dj_job_lease_my", "lease_expires_at"),
}


def _table(apps):
    return apps.get_model("dispatch_jobs", "Job")._meta.db_table


def keep_the_state_first_twins(apps, schema_editor):
    if schema_editor.connection.vendor != "mysql":
        return
    table = _table(apps)
    for name, (twin, _) in INDEXES.items():
        schema_editor.execute(f"DROP INDEX {name} ON {table}")
        schema_editor.execute(f"ALTER TABLE {table} RENAME INDEX {twin} TO {name}")


def restore_both(apps, schema_editor):
    if schema_editor.connection.vendor != "mysql":
        return
    table = _table(apps)
    for name, (twin, columns) in INDEXES.items():
        schema_editor.execute(f"ALTER TABLE {table} RENAME INDEX {name} TO {twin}")
        schema_editor.execute(f"CREATE INDEX {name} ON {table} ({columns})")


class Migration(migrations.Migration):
    atomic = False  # MariaDB cannot run DDL inside a transaction
    dependencies = [("dispatch_jobs", "0003_admin_indexes")]
    operations = [migrations.RunPython(keep_the_state_first_twins, restore_both)]
