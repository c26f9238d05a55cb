"""Keyset pagination for admin change lists: no COUNT, no OFFSET.

Django's admin pages with ``Paginator``: a ``COUNT(*)`` of the filtered rows
(and often a second one of the whole table) and ``OFFSET n`` on every page, so
a list of millions of jobs gets slower the further one pages and the more rows
match. Here a page is "the next ``per_page`` rows after this position" in a
total order on ``(sort key, id)``, served by an index, and the count is a
bounded probe: exact up to a threshold, otherwise shown as "10,000+", with an
exact count only when the operator asks for one.

The position travels in an opaque, signed cursor, so a client cannot inject
values into the query; a cursor that is malformed, tampered with or issued for
another sort order is refused with a message and the first page is shown.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, cast

from django.contrib import admin, messages
from django.contrib.admin.options import ShowFacets
from django.contrib.admin.views.main import ChangeList
from django.core.paginator import Paginator
from django.db.models import F, Model, OrderBy, Q, QuerySet
from django.http import HttpRequest

from ..conf import settings
from ..cursor import decode_cursor, encode_cursor
from ..exceptions import InvalidCursor, QueryTooBroad
from ..store import reads
from .params import CleanParamsMixin
from .safety import bounded_queries

CURSOR_VAR = "cursor"
COUNT_VAR = "count"
SORT_VAR = "sort"
# A salt of its own: a cursor from the store's list_jobs (or any other list)
# is not valid here, and the other way round.
CURSOR_SALT = "admin.changelist"
_AFTER, _BEFORE = "a", "b"


@dataclass(frozen=True)
class SortKey:
    """One whitelisted sort order: ``field`` then id, both in one direction.

    ``field`` None sorts by id alone. ``index`` names the index that serves
    it (the EXPLAIN test checks it is used). ``requires`` narrows the rows to
    those where the key is not null, because NULLs would break the keyset.
    """

    value: str
    label: str
    field: str | None
    descending: bool
    index: str
    is_time: bool = False

    def ordering(self, *, reverse: bool = False) -> list[OrderBy]:
        descending = self.descending != reverse
        columns = [self.field, "id"] if self.field else ["id"]
        return [F(c).desc() if descending else F(c).asc() for c in columns]

    def restrict(self, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.field:
            return queryset.filter(**{f"{self.field}__isnull": False})
        return queryset

    def position(self, obj: Model) -> list[Any]:
        if not self.field:
            return [None, obj.pk]
        value = getattr(obj, self.field)
        return [value.isoformat() if isinstance(value, datetime) else value, obj.pk]

    def beyond(self, position: list[Any], *, reverse: bool = False) -> Q:
        """Rows strictly after ``position`` in this order (before it if ``reverse``)."""
        value, pk = position
        forward_is_lower = self.descending != reverse
        op = "lt" if forward_is_lower else "gt"
        if not self.field:
            return Q(**{f"id__{op}": pk})
        # "field <= v AND (field < v OR id < pk)": the first term is a plain range
        # on the index's leading column, so every database can seek to it.
        edge = "lte" if forward_is_lower else "gte"
        return Q(**{f"{self.field}__{edge}": value}) & (
            Q(**{f"{self.field}__{op}": value}) | Q(**{f"id__{op}": pk})
        )

    def parse(self, raw: Any) -> Any:
        """A position value from a cursor, checked against this key's type."""
        if not self.field:
            if raw is not None:
                raise ValueError("unexpected sort value")
            return None
        if self.is_time:
            if not isinstance(raw, str):
                raise ValueError("sort value of the wrong type")
            return datetime.fromisoformat(raw)
        if isinstance(raw, bool) or not isinstance(raw, int):
            raise ValueError("sort value of the wrong type")
        return raw


@dataclass
class KeysetPage:
    object_list: list[Any]
    next_cursor: str
    previous_cursor: str

    @property
    def is_first(self) -> bool:
        return not self.previous_cursor


class KeysetPaginator:
    """``ModelAdmin.get_paginator``'s result: pages by (sort key, id).

    ``page(cursor)`` reads ``per_page + 1`` rows past the cursor's position (the
    extra row only tells whether there is a next page). It never counts.
    """

    def __init__(self, queryset: QuerySet[Any], per_page: int, sort: SortKey) -> None:
        self.queryset = sort.restrict(queryset)
        self.per_page = per_page
        self.sort = sort

    def encode(self, direction: str, obj: Model) -> str:
        return encode_cursor([self.sort.value, direction, *self.sort.position(obj)], CURSOR_SALT)

    def decode(self, cursor: str) -> tuple[str, list[Any]]:
        parts = decode_cursor(cursor, CURSOR_SALT)
        if len(parts) != 4 or parts[1] not in (_AFTER, _BEFORE):
            raise InvalidCursor(cursor, "it does not hold a list position")
        if parts[0] != self.sort.value:
            raise InvalidCursor(cursor, "it belongs to another sort order")
        if isinstance(parts[3], bool) or not isinstance(parts[3], int):
            raise InvalidCursor(cursor, "it does not hold a row id")
        try:
            value = self.sort.parse(parts[2])
        except ValueError as exc:
            raise InvalidCursor(cursor, str(exc)) from exc
        return parts[1], [value, parts[3]]

    def page(self, cursor: str = "") -> KeysetPage:
        """Raises ``InvalidCursor`` for a cursor this list did not issue."""
        if not cursor:
            return self._forward(self.queryset, first=True)
        direction, position = self.decode(cursor)
        if direction == _AFTER:
            return self._forward(self.queryset.filter(self.sort.beyond(position)), first=False)
        return self._backward(position)

    def _forward(self, queryset: QuerySet[Any], *, first: bool) -> KeysetPage:
        rows = reads.first_rows(queryset, self.sort.ordering(), self.per_page + 1)
        shown = rows[: self.per_page]
        return KeysetPage(
            object_list=shown,
            next_cursor=self.encode(_AFTER, shown[-1]) if len(rows) > self.per_page else "",
            previous_cursor=self.encode(_BEFORE, shown[0]) if shown and not first else "",
        )

    def _backward(self, position: list[Any]) -> KeysetPage:
        before = self.queryset.filter(self.sort.beyond(position, reverse=True))
        rows = reads.first_rows(before, self.sort.ordering(reverse=True), self.per_page + 1)
        if len(rows) <= self.per_page:
            # Nothing before this page: it is the first page, shown in full.
            return self._forward(self.queryset, first=True)
        shown = list(reversed(rows[: self.per_page]))
        return KeysetPage(
            object_list=shown,
            next_cursor=self.encode(_AFTER, shown[-1]),
            previous_cursor=self.encode(_BEFORE, shown[0]),
        )


def bounded_count(queryset: QuerySet[Any], threshold: int) -> int | None:
    """The number of rows, or None when there are more than ``threshold``.

    Reads at most ``threshold + 1`` ids (``SELECT id ... LIMIT threshold+1``;
    of live and of finished jobs apart where the store reads them apart)
    instead of counting every row, so its cost is bounded whatever matches.
    """
    found = reads.count_at_most(queryset, threshold + 1)
    return found if found <= threshold else None


class KeysetAdmin(Protocol):
    """What a ModelAdmin provides to be listed by ``KeysetChangeList``."""

    sort_keys: tuple[SortKey, ...]

    def get_sort_key(self, request: HttpRequest) -> SortKey: ...

    def keyset_paginator(
        self, request: HttpRequest, queryset: QuerySet[Any], per_page: int
    ) -> KeysetPaginator: ...


class KeysetChangeList(ChangeList):
    """A ChangeList that pages with ``KeysetPaginator`` and never counts in full.

    The ModelAdmin (a ``KeysetModelAdmin``) provides ``sort_keys`` (the whitelist),
    ``get_sort_key`` and ``keyset_paginator``. Query parameters of its own: ``cursor`` (the page),
    ``count=exact`` (an exact count on demand), ``sort`` (handled by a list filter).
    """

    page: KeysetPage
    count_exact: int | None = None
    notice: str = ""

    @property
    def keyset_admin(self) -> KeysetAdmin:
        return cast(KeysetAdmin, self.model_admin)

    def get_filters_params(self, params: Any = None) -> Any:
        lookup = super().get_filters_params(params)
        for var in (CURSOR_VAR, COUNT_VAR):
            lookup.pop(var, None)
        return lookup

    def get_query_string(self, new_params: Any = None, remove: Any = None) -> str:
        # A filter or sort link starts from the first page, counted the cheap way.
        new_params = {CURSOR_VAR: None, COUNT_VAR: None, **(new_params or {})}
        return super().get_query_string(new_params, remove)

    def get_ordering(self, request: HttpRequest, queryset: QuerySet[Any]) -> list[Any]:
        # Only the whitelisted key decides the order (``?o=`` is ignored), so
        # every order the list can be in has an index behind it.
        return list(self.keyset_admin.get_sort_key(request).ordering())

    def get_results(self, request: HttpRequest) -> None:
        sort = self.keyset_admin.get_sort_key(request)
        paginator = self.keyset_admin.keyset_paginator(request, self.queryset, self.list_per_page)
        threshold = settings.admin_count_threshold
        cursor = request.GET.get(CURSOR_VAR, "")
        try:
            with bounded_queries():
                self.page = self._page(request, paginator, cursor)
                self.count_exact = bounded_count(paginator.queryset, threshold)
            if self.count_exact is None and request.GET.get(COUNT_VAR) == "exact":
                with bounded_queries():
                    self.count_exact = reads.count_rows(paginator.queryset)
        except QueryTooBroad as exc:
            self.notice = str(exc)
            messages.warning(request, self.notice)
            self.page = self.page if hasattr(self, "page") else KeysetPage([], "", "")
        self.sort = sort
        self.count_capped = self.count_exact is None
        self.result_count = self.count_exact if self.count_exact is not None else threshold
        self.full_result_count = None
        self.show_full_result_count = False
        self.show_admin_actions = True
        self.result_list = self.page.object_list
        self.can_show_all = False
        self.multi_page = bool(self.page.next_cursor or self.page.previous_cursor)
        self.paginator = paginator

    def _page(self, request: HttpRequest, paginator: KeysetPaginator, cursor: str) -> KeysetPage:
        try:
            return paginator.page(cursor)
        except InvalidCursor as exc:
            messages.error(
                request, f"That page link is not valid ({exc}); showing the first page instead."
            )
            return paginator.page("")

    # --- Links the pagination template shows.
    def page_link(self, cursor: str) -> str:
        return self.get_query_string({CURSOR_VAR: cursor} if cursor else {})

    @property
    def next_link(self) -> str:
        return self.page_link(self.page.next_cursor) if self.page.next_cursor else ""

    @property
    def previous_link(self) -> str:
        return self.page_link(self.page.previous_cursor) if self.page.previous_cursor else ""

    @property
    def first_link(self) -> str:
        return self.page_link("")

    @property
    def exact_count_link(self) -> str:
        return self.get_query_string({COUNT_VAR: "exact"})

    @property
    def count_label(self) -> str:
        if self.count_exact is not None:
            return f"{self.count_exact:,}"
        return f"{settings.admin_count_threshold:,}+"

    @property
    def search_params(self) -> list[tuple[str, str]]:
        """The parameters a new search keeps: filters and sort, not the page."""
        dropped = {CURSOR_VAR, COUNT_VAR, "q", "p", "e"}
        return [(k, v) for k, v in sorted(self.params.items()) if k not in dropped]


class KeysetModelAdmin(CleanParamsMixin, admin.ModelAdmin):
    """A ModelAdmin whose change list is a ``KeysetChangeList``.

    Orders come only from ``sort_keys`` (the first is the default; ``?sort=``
    picks another), pages hold ``LIST_PAGE_SIZE`` rows, and the list never sorts
    by column header, counts facets or counts the whole table: each would read
    every row. ``list_deferred`` names columns the list never shows, which are
    not fetched for it.
    """

    sort_keys: tuple[SortKey, ...] = ()
    list_deferred: tuple[str, ...] = ()
    sortable_by = ()
    show_facets = ShowFacets.NEVER
    show_full_result_count = False

    @property
    def list_per_page(self) -> int:  # type: ignore[override]
        return settings.list_page_size

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[KeysetChangeList]:
        return KeysetChangeList

    def get_sort_key(self, request: HttpRequest) -> SortKey:
        wanted = request.GET.get(SORT_VAR, "")
        return next((key for key in self.sort_keys if key.value == wanted), self.sort_keys[0])

    def keyset_paginator(
        self, request: HttpRequest, queryset: QuerySet[Any], per_page: int
    ) -> KeysetPaginator:
        """The change list's pages (by design not a ``Paginator``: it never counts)."""
        if self.list_deferred:
            queryset = queryset.defer(*self.list_deferred)
        return KeysetPaginator(queryset, per_page, self.get_sort_key(request))

    # Django's History page pages an object's admin-log entries through this
    # hook and needs a real Paginator (page numbers, a count). Those rows are the
    # handful logged for one object, so counting them is cheap.
    def get_paginator(
        self,
        request: HttpRequest,
        queryset: QuerySet[Any],
        per_page: int,
        orphans: int = 0,
        allow_empty_first_page: bool = True,
    ) -> Paginator:
        return Paginator(queryset, per_page, orphans, allow_empty_first_page)
