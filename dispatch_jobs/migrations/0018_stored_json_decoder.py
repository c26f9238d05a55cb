"""Every JSON column is read with ``StoredJSONDecoder``: a stored value nested
deeper than Python's decoder follows comes back as its text, as text that is not
JSON does, instead of raising ``RecursionError`` in whatever read the row (a
worker's claim of hundreds of rows, an admin page). See
``dispatch_jobs/models/stored_json.py``.

The decoder is Python's business only: no column changes, so the operations
change the migration state and nothing in the database (an ``AlterField`` run
for it would rebuild the job table on SQLite).
"""

import dispatch_jobs.models.stored_json
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('dispatch_jobs', '0017_not_running_indexes'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name='job',
                    name='artifact_bindings',
                    field=models.JSONField(blank=True, decoder=dispatch_jobs.models.stored_json.StoredJSONDecoder, null=True),
                ),
                migrations.AlterField(
                    model_name='job',
                    name='attempts',
                    field=models.JSONField(blank=True, decoder=dispatch_jobs.models.stored_json.StoredJSONDecoder, default=list),
                ),
                migrations.AlterField(
                    model_name='job',
                    name='payload',
                    field=models.JSONField(decoder=dispatch_jobs.models.stored_json.StoredJSONDecoder, default=dict, help_text="{'args': [...], 'kwargs': {...}}"),
                ),
                migrations.AlterField(
                    model_name='job',
                    name='resource_limits',
                    field=models.JSONField(blank=True, decoder=dispatch_jobs.models.stored_json.StoredJSONDecoder, default=dict),
                ),
                migrations.AlterField(
                    model_name='job',
                    name='resources',
                    field=models.JSONField(blank=True, decoder=dispatch_jobs.models.stored_json.StoredJSONDecoder, default=dict),
                ),
                migrations.AlterField(
                    model_name='job',
                    name='return_value',
                    field=models.JSONField(blank=True, decoder=dispatch_jobs.models.stored_json.StoredJSONDecoder, null=True),
                ),
                migrations.AlterField(
                    model_name='job',
                    name='trace_context',
                    field=models.JSONField(blank=True, decoder=dispatch_jobs.models.stored_json.StoredJSONDecoder, null=True),
                ),
                migrations.AlterField(
                    model_name='schedule',
                    name='args',
                    field=models.JSONField(blank=True, decoder=dispatch_jobs.models.stored_json.StoredJSONDecoder, default=list),
                ),
                migrations.AlterField(
                    model_name='schedule',
                    name='kwargs',
                    field=models.JSONField(blank=True, decoder=dispatch_jobs.models.stored_json.StoredJSONDecoder, default=dict),
                ),
                migrations.AlterField(
                    model_name='usage',
                    name='resources',
                    field=models.JSONField(blank=True, decoder=dispatch_jobs.models.stored_json.StoredJSONDecoder, default=dict),
                ),
                migrations.AlterField(
                    model_name='worker',
                    name='capacity',
                    field=models.JSONField(blank=True, decoder=dispatch_jobs.models.stored_json.StoredJSONDecoder, default=dict),
                ),
                migrations.AlterField(
                    model_name='worker',
                    name='queues',
                    field=models.JSONField(decoder=dispatch_jobs.models.stored_json.StoredJSONDecoder, default=list),
                ),
            ],
        ),
    ]
