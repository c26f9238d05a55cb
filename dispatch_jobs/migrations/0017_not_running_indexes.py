"""The index diet, fourth step: the state index and the two sort keys' indexes
(priority, enqueue time) hold every job but the running ones, on PostgreSQL
(docs/performance.md, "The job table's indexes").

On PostgreSQL a state change writes a new version of the row, and the new
version gets an entry in every index whose condition it meets. A claim turns a
waiting job into a running one: with the condition ``NOT (state = 'running')``
it writes none of these three indexes, only the primary key and the lease index
(``bench.index_cost``: 8 WAL records per claimed job become 5). An enqueue, a
retry and a completion write them as before.

The running jobs are a fleet's concurrency, a few rows: a list reads them apart,
through the lease index, and the rest through these (``store.reads.first_rows``).
A query whose own condition on the state leaves running jobs out (a state
filter, the dead letter, the purge) implies the indexes' condition and reads
them as it read the whole ones.

Each index is built anew under a temporary name ``CONCURRENTLY`` (writers are
not blocked while it builds), the old one dropped ``CONCURRENTLY``, the new one
renamed. Migrating back builds the whole indexes the same way.

SQLite and MariaDB/MySQL keep the whole indexes: both write a secondary index
only when one of its columns changes (a claim changes ``state``, so SQLite would
gain one entry less on the state index and nothing on the others), and MariaDB
has no partial indexes; the store reads their lists in one part.
"""

from django.db import migrations, models
from django.db.models import Q

from ._partial_indexes import rebuild_concurrently, swapped_in_state

NOT_RUNNING = ~Q(state="running")


def _indexes(not_running: bool) -> list[models.Index]:
    """The three indexes, with the not-running condition or whole."""
    condition = {"condition": NOT_RUNNING} if not_running else {}
    return [
        models.Index(fields=["state", "-id"], name="dj_job_state_id", **condition),
        models.Index(fields=["priority", "id"], name="dj_job_priority_id", **condition),
        models.Index(fields=["created_at", "id"], name="dj_job_created_id", **condition),
    ]


def not_running(apps, schema_editor):
    rebuild_concurrently(schema_editor, apps.get_model("dispatch_jobs", "Job"), _indexes(True))


def whole(apps, schema_editor):
    rebuild_concurrently(schema_editor, apps.get_model("dispatch_jobs", "Job"), _indexes(False))


class Migration(migrations.Migration):
    atomic = False  # CREATE/DROP INDEX CONCURRENTLY cannot run inside a transaction
    dependencies = [("dispatch_jobs", "0016_replay_link_partial")]
    operations = [swapped_in_state(_indexes(False), _indexes(True), not_running, whole)]
