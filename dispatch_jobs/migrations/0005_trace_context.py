"""The job's trace context (dispatch_jobs.tracing). Nullable without a default, so
adding it rewrites no rows: a catalogue change on PostgreSQL and SQLite, an
instant ADD COLUMN on MariaDB."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("dispatch_jobs", "0004_quarantine")]

    operations = [
        migrations.AddField(
            model_name="job",
            name="trace_context",
            field=models.JSONField(blank=True, null=True),
        ),
    ]
