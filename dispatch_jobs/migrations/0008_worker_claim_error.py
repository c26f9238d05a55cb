"""A worker's failing claims, on its registry row: the last error and since when
(both NULL while its claims succeed). Nullable, so adding them rewrites no row."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("dispatch_jobs", "0007_drop_duplicate_indexes"),
    ]

    operations = [
        migrations.AddField(
            model_name="worker",
            name="claim_error",
            field=models.TextField(blank=True, help_text="The last claim failure.", null=True),
        ),
        migrations.AddField(
            model_name="worker",
            name="claim_error_since",
            field=models.DateTimeField(
                blank=True, help_text="When the current run of claim failures began.", null=True
            ),
        ),
    ]
