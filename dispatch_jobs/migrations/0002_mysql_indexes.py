"""MariaDB/MySQL have no partial indexes, so Django skips ``dj_job_ready`` there.
Give them plain indexes with the state in front, which serve the same claim
and the same expired-lease reclaim."""

from django.db import migrations

INDEXES = {
    "dj_job_ready_my": "state, queue, priority DESC, run_at, id",
    "dj_job_lease_my": "state, lease_expires_at",
}


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "mysql":
        table = apps.get_model("dispatch_jobs", "Job")._meta.db_table
        for name, columns in INDEXES.items():
            schema_editor.execute(f"CREATE INDEX {name} ON {table} ({columns})")


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "mysql":
        table = apps.get_model("dispatch_jobs", "Job")._meta.db_table
        for name in INDEXES:
            schema_editor.execute(f"DROP INDEX {name} ON {table}")


class Migration(migrations.Migration):
    atomic = False  # MariaDB cannot run DDL inside a transaction
    dependencies = [("dispatch_jobs", "0001_initial")]
    operations = [migrations.RunPython(create, drop)]
