"""Periodic schedules and their fired ticks (the unique (schedule, tick) key is
the exactly-once guard of docs/how-to/periodic.md)."""

import django.db.models.deletion
import django.db.models.functions.datetime
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('dispatch_jobs', '0010_index_diet'),
    ]

    operations = [
        migrations.CreateModel(
            name='Schedule',
            fields=[
                ('id', models.BigAutoField(primary_key=True, serialize=False)),
                ('name', models.CharField(max_length=200, unique=True)),
                ('task', models.CharField(help_text="The task's import path or alias.", max_length=255)),
                ('cron', models.CharField(blank=True, default='', help_text="Five fields, e.g. '*/5 * * * *'.", max_length=100)),
                ('interval', models.DurationField(blank=True, help_text='Instead of cron.', null=True)),
                ('timezone', models.CharField(default='UTC', help_text='IANA zone the cron expression reads in.', max_length=64)),
                ('args', models.JSONField(blank=True, default=list)),
                ('kwargs', models.JSONField(blank=True, default=dict)),
                ('queue', models.CharField(blank=True, default='', help_text="Empty: the task's own queue.", max_length=100)),
                ('priority', models.IntegerField(blank=True, help_text="Empty: the task's own priority.", null=True)),
                ('enabled', models.BooleanField(default=True)),
                ('missed', models.CharField(choices=[('skip', 'Skip all missed ticks'), ('latest', 'Fire once for the latest missed tick')], default='latest', max_length=16)),
                ('source', models.CharField(choices=[('code', 'Code'), ('admin', 'Admin')], default='admin', max_length=16)),
                ('next_fire_at', models.DateTimeField(blank=True, null=True)),
                ('last_fired_at', models.DateTimeField(blank=True, null=True)),
                ('last_tick_at', models.DateTimeField(blank=True, null=True)),
                ('last_job_id', models.BigIntegerField(blank=True, null=True)),
                ('last_error', models.TextField(blank=True, default='')),
                ('created_at', models.DateTimeField(db_default=django.db.models.functions.datetime.Now())),
                ('updated_at', models.DateTimeField(db_default=django.db.models.functions.datetime.Now())),
            ],
            options={
                'ordering': ['name'],
                'permissions': [('toggle_schedule', 'Can enable and disable schedules'), ('run_schedule', "Can run a schedule's job now")],
                'indexes': [models.Index(fields=['enabled', 'next_fire_at'], name='dj_schedule_due')],
            },
        ),
        migrations.CreateModel(
            name='ScheduleTick',
            fields=[
                ('id', models.BigAutoField(primary_key=True, serialize=False)),
                ('tick', models.DateTimeField(help_text='The tick fired (UTC).')),
                ('job_id', models.BigIntegerField(blank=True, null=True)),
                ('fired_at', models.DateTimeField(db_default=django.db.models.functions.datetime.Now())),
                ('schedule', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='ticks', to='dispatch_jobs.schedule')),
            ],
            options={
                'indexes': [models.Index(fields=['fired_at'], name='dj_scheduletick_fired')],
                'constraints': [models.UniqueConstraint(fields=('schedule', 'tick'), name='dj_scheduletick_key')],
            },
        ),
    ]
