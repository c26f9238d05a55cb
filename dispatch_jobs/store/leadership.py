"""Named database leases: one holder at a time for a fleet-wide duty."""

from __future__ import annotations

from datetime import timedelta

from django.db import IntegrityError, transaction
from django.db.models import Q, QuerySet

from ..models import Leadership
from . import db


def _leaderships() -> QuerySet[Leadership]:
    return Leadership.objects.using(db.alias())


def acquire_leadership(name: str, holder: str, ttl: timedelta) -> bool:
    """Take or extend the named lease for ``holder`` until database-now + ttl.

    True when ``holder`` now holds it. A conditional UPDATE (held by me, or
    expired) decides between competitors atomically; the first-ever holder is
    decided by the primary key on INSERT.
    """
    taken = (
        _leaderships()
        .filter(Q(holder=holder) | Q(expires_at__lt=db.now_plus(timedelta(0))), name=name)
        .update(holder=holder, expires_at=db.now_plus(ttl))
    )
    if taken:
        return True
    if _leaderships().filter(name=name).exists():
        return False
    try:
        with transaction.atomic(using=db.alias()):
            _leaderships().create(name=name, holder=holder, expires_at=db.now_plus(ttl))
    except IntegrityError:
        return False
    return True


def release_leadership(name: str, holder: str) -> None:
    _leaderships().filter(name=name, holder=holder).delete()


def leader_of(name: str) -> str:
    row = _leaderships().filter(name=name, expires_at__gte=db.now_plus(timedelta(0))).first()
    return row.holder if row else ""
