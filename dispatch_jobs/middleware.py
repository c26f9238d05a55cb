"""Scope from the request: jobs enqueued while handling a request carry its scope.

    MIDDLEWARE = [..., "dispatch_jobs.middleware.ScopeMiddleware"]
    DISPATCH_JOBS = {"SCOPE_FROM_REQUEST": "myproject.tenancy.job_scope"}

    def job_scope(request):
        return (request.tenant.app_id, request.tenant.org_id)   # or a Scope, or None

Place it after the middleware that identifies the tenant (authentication, say).
Without ``SCOPE_FROM_REQUEST`` it does nothing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.http import HttpRequest, HttpResponseBase
from django.utils.module_loading import import_string

from .conf import settings
from .scope import Scope, as_scope, scope


def scope_for(request: HttpRequest) -> Scope:
    """The scope ``SCOPE_FROM_REQUEST`` computes for ``request`` (empty when unset)."""
    path = settings.scope_from_request
    if not path:
        return Scope()
    func: Callable[[HttpRequest], Any] = import_string(path)
    return as_scope(func(request))


class ScopeMiddleware:
    """Sets ``dispatch_jobs.scope`` for the duration of each request."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response
        self.async_mode = iscoroutinefunction(get_response)
        if self.async_mode:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> HttpResponseBase | Awaitable[HttpResponseBase]:
        if self.async_mode:
            return self.__acall__(request)
        current = scope_for(request)
        with scope(current.app_id, current.org_id):
            return self.get_response(request)

    async def __acall__(self, request: HttpRequest) -> HttpResponseBase:
        current = scope_for(request)
        # The context variable is set in this coroutine, so the awaited view (and
        # any sync view asgiref runs in a thread with a copied context) sees it.
        with scope(current.app_id, current.org_id):
            return await self.get_response(request)
