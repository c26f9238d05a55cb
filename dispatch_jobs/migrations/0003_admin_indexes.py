"""Indexes for the admin: its whitelisted sort keys (priority, finished time), the
enqueued/finished time-range and worker filters, and, on PostgreSQL only, a GIN
index that serves the argument search (JSON containment, ``payload @> ...``) and a
pattern index that serves the task-name prefix search (``LIKE 'x%'`` cannot use a
plain btree index under a non-C collation)."""

from django.db import migrations, models

POSTGRES_INDEXES = {
    "dj_job_payload_gin": "USING gin (payload jsonb_path_ops)",
    "dj_job_name_pattern": "(name varchar_pattern_ops)",
}


def create_postgres_indexes(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        table = apps.get_model("dispatch_jobs", "Job")._meta.db_table
        for name, definition in POSTGRES_INDEXES.items():
            schema_editor.execute(f"CREATE INDEX {name} ON {table} {definition}")


def drop_postgres_indexes(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for name in POSTGRES_INDEXES:
            schema_editor.execute(f"DROP INDEX IF EXISTS {name}")


class Migration(migrations.Migration):
    atomic = False  # MariaDB cannot run DDL inside a transaction
    dependencies = [("dispatch_jobs", "0002_mysql_indexes")]
    operations = [
        migrations.AddIndex(
            model_name="job",
            index=models.Index(fields=["priority", "id"], name="dj_job_priority_id"),
        ),
        migrations.AddIndex(
            model_name="job",
            index=models.Index(fields=["completed_at", "id"], name="dj_job_completed_id"),
        ),
        migrations.AddIndex(
            model_name="job",
            index=models.Index(fields=["created_at", "id"], name="dj_job_created_id"),
        ),
        migrations.AddIndex(
            model_name="job",
            index=models.Index(fields=["worker_id", "-id"], name="dj_job_worker_id"),
        ),
        migrations.RunPython(create_postgres_indexes, drop_postgres_indexes),
    ]
