"""The index diet, third step: the replay link's unique index holds only the rows
that replay a job (docs/performance.md, "The job table's indexes").

``Job.replay_of`` is a one-to-one link, so PostgreSQL holds a unique constraint
on ``replay_of_id``, and its index gets an entry for every row version: a NULL
for nearly every job, at every enqueue, claim, completion and retry. A unique
index with the condition ``replay_of_id IS NOT NULL`` refuses exactly the same
rows (PostgreSQL never counts two NULLs as equal) and is written only when a job
is replayed. A lookup by ``replay_of_id = <id>`` implies the condition, so it
reads the partial index as it read the whole one.

The new index is built ``CONCURRENTLY`` before the constraint is dropped, so the
link is never unguarded. The model's state is unchanged (a one-to-one field,
unique): only the index that enforces it differs, on PostgreSQL.

SQLite and MariaDB/MySQL keep their whole unique index: both write a secondary
index only when one of its columns changes, so a claim or a completion does not
touch it there (and MariaDB has no partial indexes).
"""

from django.db import migrations

INDEX = "dj_job_replay_of"
# What PostgreSQL names a column's inline unique constraint, as the first
# migration created it; the reverse restores it under this name.
CONSTRAINT = "dispatch_jobs_job_replay_of_id_key"


def _unique_constraints(schema_editor, table: str) -> list[str]:
    """The unique constraints on ``replay_of_id`` alone (not plain indexes)."""
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            "SELECT conname FROM pg_constraint WHERE conrelid = %s::regclass "
            "AND contype = 'u' AND conkey = ARRAY[("
            "SELECT attnum FROM pg_attribute WHERE attrelid = %s::regclass "
            "AND attname = 'replay_of_id')]::int2[]",
            [table, table],
        )
        return [row[0] for row in cursor.fetchall()]


def partial(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    table = apps.get_model("dispatch_jobs", "Job")._meta.db_table
    quoted = schema_editor.quote_name(table)
    schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {INDEX}")
    schema_editor.execute(
        f"CREATE UNIQUE INDEX CONCURRENTLY {INDEX} ON {quoted} (replay_of_id) "
        "WHERE replay_of_id IS NOT NULL"
    )
    for name in _unique_constraints(schema_editor, table):
        schema_editor.execute(
            f"ALTER TABLE {quoted} DROP CONSTRAINT {schema_editor.quote_name(name)}"
        )


def whole(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    table = apps.get_model("dispatch_jobs", "Job")._meta.db_table
    quoted = schema_editor.quote_name(table)
    if not _unique_constraints(schema_editor, table):
        building = f"{CONSTRAINT}_new"
        schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {building}")
        schema_editor.execute(
            f"CREATE UNIQUE INDEX CONCURRENTLY {building} ON {quoted} (replay_of_id)"
        )
        # USING INDEX renames the index to the constraint's name.
        schema_editor.execute(
            f"ALTER TABLE {quoted} ADD CONSTRAINT {CONSTRAINT} UNIQUE USING INDEX {building}"
        )
    schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {INDEX}")


class Migration(migrations.Migration):
    atomic = False  # CREATE/DROP INDEX CONCURRENTLY cannot run inside a transaction
    dependencies = [("dispatch_jobs", "0015_finished_filter_indexes")]
    operations = [migrations.RunPython(partial, whole, elidable=False)]
