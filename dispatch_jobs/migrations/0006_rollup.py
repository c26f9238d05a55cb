"""The dashboard's rollup: finished jobs per task, queue and minute
(``TaskMinute``), and the watermark its writer reads from (``RollupMark``)."""

import django.db.models.functions.datetime
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False  # MariaDB cannot run DDL inside a transaction

    dependencies = [
        ("dispatch_jobs", "0005_trace_context"),
    ]

    operations = [
        migrations.CreateModel(
            name="RollupMark",
            fields=[
                ("name", models.CharField(max_length=100, primary_key=True, serialize=False)),
                ("completed_at", models.DateTimeField(blank=True, null=True)),
                ("job_id", models.BigIntegerField(default=0)),
                (
                    "updated_at",
                    models.DateTimeField(db_default=django.db.models.functions.datetime.Now()),
                ),
            ],
        ),
        migrations.CreateModel(
            name="TaskMinute",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                (
                    "minute",
                    models.DateTimeField(help_text="The bucket's start (UTC, whole minute)."),
                ),
                ("name", models.CharField(max_length=255)),
                ("queue", models.CharField(max_length=100)),
                ("completed", models.IntegerField(default=0)),
                ("failed", models.IntegerField(default=0)),
                ("cancelled", models.IntegerField(default=0)),
                (
                    "retried",
                    models.IntegerField(
                        default=0, help_text="Retries the finished jobs went through."
                    ),
                ),
                ("run_ms_total", models.BigIntegerField(default=0)),
                ("run_ms_max", models.BigIntegerField(default=0)),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        fields=("minute", "name", "queue"), name="dj_taskminute_key"
                    )
                ],
            },
        ),
    ]
