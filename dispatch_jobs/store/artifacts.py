"""Artifact rows: the bytes jobs take as declared inputs (``models.Artifact``).

The bytes themselves are in a Django storage; ``dispatch_jobs.artifacts.register``
writes them there and then records the row here.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import QuerySet

from ..models import Artifact
from . import db


def _artifacts() -> QuerySet[Artifact]:
    return Artifact.objects.using(db.alias())


def record_artifact(
    *, content_hash: str, size: int, media_type: str, storage: str, path: str
) -> Artifact:
    """Record bytes already in ``storage`` at ``path`` as an artifact."""
    artifact = Artifact(
        content_hash=content_hash, size=size, media_type=media_type, storage=storage, path=path
    )
    artifact.save(using=db.alias(), force_insert=True)
    artifact.refresh_from_db(using=db.alias(), fields=["created_at"])
    return artifact


def artifacts_by_id(ids: Iterable[int]) -> dict[int, Artifact]:
    """The artifacts of ``ids`` that exist, by id (one query)."""
    wanted = sorted(set(ids))
    if not wanted:
        return {}
    return {a.pk: a for a in _artifacts().filter(id__in=wanted)}


def delete_artifact(artifact_id: int) -> bool:
    """Forget an artifact's row (its bytes stay in the storage: other rows of the
    same content may name them). Jobs already bound to it keep their reference."""
    deleted, _ = _artifacts().filter(id=artifact_id).delete()
    return bool(deleted)
