"""Queue controls: pause and resume. Every claim skips a paused queue."""

from __future__ import annotations

from django.db.models.functions import Now

from ..models import QueueControl
from . import db


def pause_queue(name: str) -> None:
    QueueControl.objects.using(db.alias()).update_or_create(
        name=name, defaults={"paused": True, "updated_at": Now()}
    )


def resume_queue(name: str) -> None:
    QueueControl.objects.using(db.alias()).filter(name=name).update(paused=False, updated_at=Now())


def paused_queues() -> set[str]:
    return set(
        QueueControl.objects.using(db.alias()).filter(paused=True).values_list("name", flat=True)
    )
