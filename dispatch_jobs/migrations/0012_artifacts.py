"""Artifacts: the bytes jobs take as declared inputs (docs/how-to/inputs.md)."""

import django.db.models.functions.datetime
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('dispatch_jobs', '0011_schedules'),
    ]

    operations = [
        migrations.CreateModel(
            name='Artifact',
            fields=[
                ('id', models.BigAutoField(primary_key=True, serialize=False)),
                ('content_hash', models.CharField(db_index=True, help_text='sha256, hex.', max_length=64)),
                ('size', models.BigIntegerField(help_text='bytes')),
                ('media_type', models.CharField(default='application/octet-stream', max_length=255)),
                ('storage', models.CharField(default='default', help_text='STORAGES alias.', max_length=100)),
                ('path', models.CharField(help_text='The name within the storage.', max_length=500)),
                ('created_at', models.DateTimeField(db_default=django.db.models.functions.datetime.Now())),
            ],
            options={
                'ordering': ['-id'],
            },
        ),
    ]
