"""MariaDB/MySQL: each claim-side index once, not twice.

Django builds the model's partial indexes on MariaDB too, without their condition
(``models.W037``): ``dj_job_ready`` on ``(queue, priority DESC, run_at, id)``,
``dj_job_lease`` on ``(lease_expires_at)`` and ``dj_job_suspect`` on
``(queue, run_at)``, plain indexes that every row, finished ones included,
enters. Migrations 0002 and 0004 added the twins that serve the claim, the
reclaim and the suspect probe there, with the condition's columns in front
(``*_my``), so each write paid for both. Drop Django's plain ones and give the
twins the model's names: the migration state keeps describing indexes that
exist, and a later ``RemoveIndex`` of ``dj_job_ready`` acts on the one that serves.
"""

from django.db import migrations

# The model's name → the twin that serves, and what Django had built there.
INDEXES = {
    "dj_job_ready": ("dj_job_ready_my", "queue, priority DESC, run_at, id"),
    "dj_job_lease": ("dj_job_lease_my", "lease_expires_at"),
    "dj_job_suspect": ("dj_job_suspect_my", "queue, run_at"),
}


def _table(apps):
    return apps.get_model("dispatch_jobs", "Job")._meta.db_table


def keep_the_twins(apps, schema_editor):
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
    dependencies = [("dispatch_jobs", "0006_rollup")]
    operations = [migrations.RunPython(keep_the_twins, restore_both)]
