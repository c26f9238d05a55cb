"""Queue controls: pause and resume, and limits. Every claim skips a paused
queue; a queue with limits is claimed from only by ``store.limited_claim``,
under its control row's lock (docs/how-to/limits.md)."""

from __future__ import annotations

import time
from collections.abc import Mapping

from django.db import transaction
from django.db.models.functions import Now

from ..models import LIMITED, LimitsSource, QueueControl, QueueStart
from ..queue_limits import QueueLimits, of_control
from . import db

# How long a process trusts its list of limited queues. Only liveness rides on
# it: a claim's own statement skips limited queues as they are in the table at
# that moment, so a new limit holds at the next claim whatever this list says;
# a queue newly limited merely waits up to this long for its first limited claim.
LIMITED_REFRESH = 1.0

_limited: dict[str, tuple[float, frozenset[str]]] = {}


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


def limited_queues() -> frozenset[str]:
    """The queues with a limit, read at most once per ``LIMITED_REFRESH`` per
    process: the one cost the limits add to an unlimited claim is this lookup."""
    alias = db.alias()
    now = time.monotonic()
    cached = _limited.get(alias)
    if cached is not None and cached[0] > now:
        return cached[1]
    names = frozenset(
        QueueControl.objects.using(alias).filter(LIMITED).values_list("name", flat=True)
    )
    _limited[alias] = (now + LIMITED_REFRESH, names)
    return names


def forget_limited_queues() -> None:
    """Read the limited queues afresh at the next claim (after a change here)."""
    _limited.clear()


def queue_limits(name: str) -> tuple[QueueLimits, str]:
    """A queue's limits and who set them (``LimitsSource``)."""
    control = QueueControl.objects.using(db.alias()).filter(name=name).first()
    if control is None:
        return QueueLimits(), LimitsSource.NONE
    return of_control(control), control.limits_source


def set_queue_limits(name: str, limits: QueueLimits, *, source: str = LimitsSource.ADMIN) -> None:
    """Store ``name``'s limits (all of them: None is unlimited); the next claim
    obeys them. Dropping a rate limit drops its window of recent starts."""
    alias = db.alias()
    with transaction.atomic(using=alias):
        QueueControl.objects.using(alias).update_or_create(
            name=name,
            defaults={**limits.columns(), "limits_source": source, "updated_at": Now()},
        )
        if limits.rate_limit is None:
            QueueStart.objects.using(alias).filter(queue=name).delete()
    forget_limited_queues()


def sync_queue_limits(declared: Mapping[str, QueueLimits]) -> list[str]:
    """Write the settings' limits (``QUEUE_LIMITS``) at worker start; the queues
    changed. Limits an operator set in the admin win: those rows are left alone.
    A queue the settings limited before but no longer name loses those limits.
    Safe for many workers starting at once (each write is the same)."""
    alias = db.alias()
    controls = {c.name: c for c in QueueControl.objects.using(alias).all()}
    changed = []
    for name, limits in sorted(declared.items()):
        control = controls.get(name)
        if control is not None and control.limits_source == LimitsSource.ADMIN:
            continue
        if control is not None and of_control(control) == limits:
            continue
        set_queue_limits(name, limits, source=LimitsSource.SETTINGS)
        changed.append(name)
    for name, control in sorted(controls.items()):
        if control.limits_source == LimitsSource.SETTINGS and name not in declared:
            set_queue_limits(name, QueueLimits(), source=LimitsSource.NONE)
            changed.append(name)
    return changed


def revert_queue_limits(name: str, declared: Mapping[str, QueueLimits]) -> QueueLimits:
    """Hand a queue's limits back to the settings: theirs if they name it, else none."""
    limits = declared.get(name)
    if limits is None:
        set_queue_limits(name, QueueLimits(), source=LimitsSource.NONE)
        return QueueLimits()
    set_queue_limits(name, limits, source=LimitsSource.SETTINGS)
    return limits
