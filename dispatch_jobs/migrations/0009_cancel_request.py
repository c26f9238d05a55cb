from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("dispatch_jobs", "0008_worker_claim_error")]

    operations = [
        migrations.AddField(
            model_name="job",
            name="cancel_requested_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="job",
            name="cancel_requested_by",
            field=models.CharField(blank=True, default="", max_length=150),
        ),
    ]
