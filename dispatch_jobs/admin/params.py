"""Query parameters and URL parts as the admin accepts them.

A value typed into a URL reaches the database as text only if the database can
hold it: PostgreSQL refuses a NUL character in any text (the driver raises
before the query is sent), and a lone UTF-16 surrogate (which a JSON escape
such as ``"\\ud800"`` produces) cannot be encoded for any of the three. Such a
value, or one longer than any column the admin filters on, is dropped here at
the boundary with a message saying which parameter was ignored and why, so the
page renders as if it had not been given, never as an error page.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, QueryDict

from ..readback import rendered_with_nearest_values

# Longer than any column a filter compares with (task names are 255), so a
# longer value can match nothing; JSON argument searches fit well inside it.
MAX_CHARS = 1_000
# The largest id a BIGINT key holds; a larger number names no job.
MAX_ID = 2**63 - 1


def problem(value: str) -> str:
    """Why ``value`` cannot be used as a filter ("" when it can)."""
    if "\x00" in value:
        return "it contains a NUL character"
    if any("\ud800" <= char <= "\udfff" for char in value):
        return "it contains a lone surrogate"
    if len(value) > MAX_CHARS:
        return f"it is longer than {MAX_CHARS:,} characters"
    return ""


def refuse(request: HttpRequest, name: str, value: str, reason: str) -> None:
    shown = value.replace("\x00", "\\x00")[:40]
    more = "…" if len(value) > 40 else ""
    messages.error(
        request, f"{shown!r}{more} is not a valid filter for {name!r}: {reason}; it was ignored."
    )


def cleaned(request: HttpRequest, data: QueryDict) -> QueryDict:
    """``data`` without the values ``problem`` refuses, each refused with a message."""
    bad = [(k, v, problem(v)) for k, values in data.lists() for v in values if problem(v)]
    if not bad:
        return data
    for name, value, reason in bad:
        refuse(request, name, value, reason)
    kept = QueryDict(mutable=True)
    for name, values in data.lists():
        good = [v for v in values if not problem(v)]
        if good:  # a name left with no value is dropped: readers expect one
            kept.setlist(name, good)
    kept._mutable = False  # as Django hands them to views
    return kept


def clean_request(request: HttpRequest) -> None:
    """Drop refused values from ``request.GET`` and ``request.POST`` in place,
    so every later reader (Django's ChangeList, the filters, our views) sees
    only values the database can take."""
    request.GET = cleaned(request, request.GET)  # type: ignore[assignment]
    if request.method == "POST":
        request.POST = cleaned(request, request.POST)  # type: ignore[assignment]


class CleanParamsMixin:
    """For ModelAdmins: every view's query and form values are cleaned first,
    and an object id the database cannot hold finds no object (Django then
    answers with its "does not exist" redirect). Each view runs, and renders,
    reading a stored time Python cannot hold as the nearest one it can
    (``readback``)."""

    def get_object(self, request: HttpRequest, object_id: str, from_field: Any = None) -> Any:
        if problem(object_id):
            return None
        return super().get_object(request, object_id, from_field)  # type: ignore[misc]

    def changeform_view(self, request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        clean_request(request)
        view = super().changeform_view  # type: ignore[misc]
        return rendered_with_nearest_values(view)(request, *args, **kwargs)

    def changelist_view(self, request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        clean_request(request)
        view = super().changelist_view  # type: ignore[misc]
        return rendered_with_nearest_values(view)(request, *args, **kwargs)

    def history_view(self, request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        clean_request(request)
        view = super().history_view  # type: ignore[misc]
        return rendered_with_nearest_values(view)(request, *args, **kwargs)

    def delete_view(self, request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        clean_request(request)
        view = super().delete_view  # type: ignore[misc]
        return rendered_with_nearest_values(view)(request, *args, **kwargs)


def job_id(text: str) -> int | None:
    """The job id in "7" or "#7", or None when ``text`` is not one (or names
    an id no BIGINT key can hold)."""
    digits = text.strip().removeprefix("#")
    if not (digits.isascii() and digits.isdigit()) or len(digits) > 19:
        return None
    number = int(digits)
    return number if 0 < number <= MAX_ID else None


def guarded(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """``view`` with its request cleaned first: for the admin's own extra URLs."""

    @wraps(view)
    def inner(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        clean_request(request)
        return rendered_with_nearest_values(view)(request, *args, **kwargs)

    return inner
