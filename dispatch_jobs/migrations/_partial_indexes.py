"""What the index diet's PostgreSQL steps share (migrations 0015 and 0017): the
indexes rebuilt ``CONCURRENTLY`` with or without a condition, and the model's
state told of the change. The migration loader skips modules whose name starts
with an underscore, so this is not a migration."""

from django.db import migrations, models


def rebuild_concurrently(schema_editor, model, indexes: list[models.Index]) -> None:
    """Each index built anew under a temporary name ``CONCURRENTLY`` (writers are
    not blocked while it builds), the old one dropped ``CONCURRENTLY``, the new
    one renamed. PostgreSQL only: elsewhere the indexes stay as they are."""
    if schema_editor.connection.vendor != "postgresql":
        return
    for index in indexes:
        name, temporary = index.name, f"{index.name}_new"
        _, _, kwargs = index.deconstruct()
        replacement = models.Index(**{**kwargs, "name": temporary})
        schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {temporary}")
        schema_editor.execute(
            replacement.create_sql(model, schema_editor, concurrently=True), params=None
        )
        schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")
        schema_editor.execute(f"ALTER INDEX {temporary} RENAME TO {name}")


def swapped_in_state(
    before: list[models.Index], after: list[models.Index], forward, backward
) -> migrations.SeparateDatabaseAndState:
    """The operation that tells the model's state each index of ``before`` is now
    its namesake in ``after``, while ``forward``/``backward`` change the database."""
    return migrations.SeparateDatabaseAndState(
        state_operations=[
            operation
            for old, new in zip(before, after, strict=True)
            for operation in (
                migrations.RemoveIndex(model_name="job", name=old.name),
                migrations.AddIndex(model_name="job", index=new),
            )
        ],
        database_operations=[migrations.RunPython(forward, backward)],
    )
