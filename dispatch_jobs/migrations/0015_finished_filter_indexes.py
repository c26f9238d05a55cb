"""The index diet, second step: the job list's filter indexes hold finished rows
only (docs/performance.md, "The job table's indexes").

On PostgreSQL a state change rewrites the row, and the new version gets an entry
in every index whose condition it meets, whichever columns changed. The filter
indexes (queue, task name, app and organization scope, worker, and the argument
search's GIN index) serve the admin's and the store's lists; with the condition
``state IN ('completed', 'failed', 'cancelled')`` an enqueue, a claim, a retry
and a heartbeat write none of them, and a completion writes each once. A list
reads live and finished rows apart (``store.reads.first_rows``): the finished
part through these indexes, the live part, which is the backlog and the running
jobs, through the state index and the primary key. The state index and the two
sort keys' indexes (priority, enqueue time) stay whole.

Each index is built anew under a temporary name ``CONCURRENTLY`` (writers are
not blocked while it builds), the old one dropped ``CONCURRENTLY``, the new one
renamed: on a large job table this takes a while but stops no worker.

SQLite and MariaDB/MySQL keep the whole indexes, and the store reads their lists
whole (the engine's ``finished_apart``): Django reads no two sliced parts in one
statement on SQLite, and InnoDB writes a secondary index only when one of its
columns changes, which a claim's and a completion's do not, so a condition there
would buy nothing (MariaDB has no partial indexes anyway).
"""

from django.db import migrations, models
from django.db.models import Q

from ._partial_indexes import rebuild_concurrently, swapped_in_state

FINISHED = Q(state__in=("completed", "failed", "cancelled"))
FINISHED_SQL = "state IN ('completed', 'failed', 'cancelled')"


def _indexes(finished: bool) -> list[models.Index]:
    """The five btree filter indexes, with the finished-only condition or whole."""
    condition = {"condition": FINISHED} if finished else {}
    return [
        models.Index(fields=["queue", "-id"], name="dj_job_queue_id", **condition),
        models.Index(
            fields=["name", "-id"],
            name="dj_job_name_id",
            opclasses=["varchar_pattern_ops", "int8_ops"],
            **condition,
        ),
        models.Index(
            fields=["scope_app_id", "scope_org_id", "-id"], name="dj_job_scope_id", **condition
        ),
        models.Index(fields=["scope_org_id", "-id"], name="dj_job_org_id", **condition),
        models.Index(fields=["worker_id", "-id"], name="dj_job_worker_id", **condition),
    ]


GIN = "dj_job_payload_gin"
GIN_DEFINITION = "USING gin (payload jsonb_path_ops)"


def _rebuild(schema_editor, model, finished: bool) -> None:
    """Each filter index rebuilt as finished-only (``finished``) or whole, on PostgreSQL."""
    if schema_editor.connection.vendor != "postgresql":
        return
    table = schema_editor.quote_name(model._meta.db_table)
    rebuild_concurrently(schema_editor, model, _indexes(finished))
    where = f" WHERE {FINISHED_SQL}" if finished else ""
    schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {GIN}_new")
    schema_editor.execute(
        f"CREATE INDEX CONCURRENTLY {GIN}_new ON {table} {GIN_DEFINITION}{where}"
    )
    schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {GIN}")
    schema_editor.execute(f"ALTER INDEX {GIN}_new RENAME TO {GIN}")


def finished_only(apps, schema_editor):
    _rebuild(schema_editor, apps.get_model("dispatch_jobs", "Job"), finished=True)


def whole(apps, schema_editor):
    _rebuild(schema_editor, apps.get_model("dispatch_jobs", "Job"), finished=False)


class Migration(migrations.Migration):
    atomic = False  # CREATE/DROP INDEX CONCURRENTLY cannot run inside a transaction
    dependencies = [("dispatch_jobs", "0014_worker_execution")]
    operations = [swapped_in_state(_indexes(False), _indexes(True), finished_only, whole)]
