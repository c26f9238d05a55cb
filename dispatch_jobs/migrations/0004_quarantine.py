from django.db import migrations, models
from django.db.models import Q


def create_mysql_index(apps, schema_editor):
    # MariaDB/MySQL have no partial indexes (Django skips dj_job_suspect there).
    if schema_editor.connection.vendor == "mysql":
        table = apps.get_model("dispatch_jobs", "Job")._meta.db_table
        schema_editor.execute(f"CREATE INDEX dj_job_suspect_my ON {table} (quarantine, state)")


def drop_mysql_index(apps, schema_editor):
    if schema_editor.connection.vendor == "mysql":
        table = apps.get_model("dispatch_jobs", "Job")._meta.db_table
        schema_editor.execute(f"DROP INDEX dj_job_suspect_my ON {table}")


class Migration(migrations.Migration):
    atomic = False  # MariaDB cannot run DDL inside a transaction
    dependencies = [("dispatch_jobs", "0003_admin_indexes")]

    operations = [
        migrations.AddField(
            model_name="job",
            name="quarantine",
            field=models.PositiveSmallIntegerField(
                choices=[(0, "Ordinary"), (1, "Suspect: runs alone next"), (2, "Running alone")],
                default=0,
            ),
        ),
        migrations.AddField(
            model_name="job",
            name="lone_evictions",
            field=models.IntegerField(
                default=0, help_text="Evictions while running alone: the evidence of poison."
            ),
        ),
        migrations.AddIndex(
            model_name="job",
            index=models.Index(
                condition=Q(quarantine=1, state__in=["pending", "retrying"]),
                fields=["queue", "run_at"],
                name="dj_job_suspect",
            ),
        ),
        migrations.RunPython(create_mysql_index, drop_mysql_index),
    ]
