"""The cursor-paged job list: newest first, keyset-paged on the id."""

from __future__ import annotations

from django.db.models import Q, QuerySet, Value
from django.db.models.functions import Substr
from django.db.models.lookups import Exact

from ..conf import settings
from ..cursor import decode_cursor, encode_cursor
from ..exceptions import InvalidCursor
from ..models import Job
from . import db, reads
from .options import ListOptions, Page

CURSOR_SALT = "store.list_jobs"


def list_jobs(opts: ListOptions) -> Page:
    """One page of jobs matching ``opts``, newest first.

    Raises ``InvalidCursor`` for a cursor that is malformed or was not issued by
    this list (never a silent first page).
    """
    limit = opts.limit if opts.limit > 0 else settings.list_page_size
    qs = _filtered(opts)
    if opts.cursor:
        position = decode_cursor(opts.cursor, CURSOR_SALT)
        if len(position) != 1 or type(position[0]) is not int:  # bool is no position
            raise InvalidCursor(opts.cursor, "it does not hold a job position")
        qs = qs.filter(id__lt=position[0])
    rows = reads.first_rows(qs, ["-id"], limit + 1)
    jobs = rows[:limit]
    next_cursor = encode_cursor([jobs[-1].id], CURSOR_SALT) if len(rows) > limit else ""
    return Page(jobs=jobs, next_cursor=next_cursor, complete=True)


def _filtered(opts: ListOptions) -> QuerySet[Job]:
    qs = Job.objects.using(db.alias())
    if opts.states:
        qs = qs.filter(state__in=list(opts.states))
    if opts.queue:
        qs = qs.filter(queue=opts.queue)
    if opts.scope_app_id:
        qs = qs.filter(scope_app_id=opts.scope_app_id)
    if opts.scope_org_id:
        qs = qs.filter(scope_org_id=opts.scope_org_id)
    if opts.name_prefix:
        qs = qs.filter(_name_prefix(opts.name_prefix))
    return qs


def _name_prefix(prefix: str) -> Q:
    """Literal, case-sensitive prefix: ``%`` and ``_`` are ordinary characters.

    ``startswith`` (escaped LIKE) narrows through the name index where the
    database can; the exact comparison of the leading characters decides, since
    LIKE is case-insensitive on SQLite and under MariaDB's default collations.
    """
    head = db.engine().exact_text(Substr("name", 1, len(prefix)))
    return Q(name__startswith=prefix) & Q(Exact(head, Value(prefix)))
