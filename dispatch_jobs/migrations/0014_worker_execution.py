"""The rung a worker runs its jobs at (``rungs``), on its registry row. A default,
so existing rows (and workers of the previous version) read as in-process."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("dispatch_jobs", "0013_limits"),
    ]

    operations = [
        migrations.AddField(
            model_name="worker",
            name="execution",
            field=models.CharField(
                default="in-process",
                help_text="The rung every job runs at on this worker.",
                max_length=32,
            ),
        ),
    ]
