"""ScopeMiddleware: jobs enqueued while handling a request carry its scope."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import cast

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.test import RequestFactory, override_settings

from dispatch_jobs.middleware import ScopeMiddleware
from dispatch_jobs.models import Job
from dispatch_jobs.scope import Scope, current_scope
from tests.jobs import tasks

pytestmark = pytest.mark.django_db

SETTING = {"SCOPE_FROM_REQUEST": "tests.backend.test_middleware.tenant_scope"}


def tenant_scope(request: HttpRequest) -> tuple[str, str] | None:
    """The project's function: the tenant from a header, say."""
    org = request.headers.get("X-Org")
    return ("shop", org) if org else None


def enqueue_view(request: HttpRequest) -> HttpResponse:
    result = tasks.add.enqueue(1, 2)
    return HttpResponse(result.id)


async def async_enqueue_view(request: HttpRequest) -> HttpResponse:
    result = await tasks.add.aenqueue(1, 2)
    return HttpResponse(result.id)


def _job(response: HttpResponseBase | Awaitable[HttpResponseBase]) -> Job:
    # The views return an HttpResponse; the middleware's declared return type is
    # wider (any HttpResponseBase, or an awaitable in async mode).
    assert isinstance(response, HttpResponse), response
    return Job.objects.get(pk=int(response.content))


def _call_async(middleware: ScopeMiddleware, request: HttpRequest) -> HttpResponseBase:
    """Run ``middleware`` as an ASGI handler would: it was built around an async view,
    so it is a coroutine function (``markcoroutinefunction``), which its type cannot say."""
    assert middleware.async_mode
    handler = cast(Callable[[HttpRequest], Awaitable[HttpResponseBase]], middleware)
    return async_to_sync(handler)(request)


@override_settings(DISPATCH_JOBS=SETTING)
def test_sync_request_scope_is_stored_on_the_job():
    middleware = ScopeMiddleware(enqueue_view)
    job = _job(middleware(RequestFactory().get("/", headers={"X-Org": "org-42"})))
    assert (job.scope_app_id, job.scope_org_id) == ("shop", "org-42")
    assert current_scope() == Scope()  # reset after the request


@override_settings(DISPATCH_JOBS=SETTING)
def test_request_without_a_tenant_has_no_scope():
    job = _job(ScopeMiddleware(enqueue_view)(RequestFactory().get("/")))
    assert (job.scope_app_id, job.scope_org_id) == ("", "")


def test_without_the_setting_the_middleware_does_nothing():
    job = _job(ScopeMiddleware(enqueue_view)(RequestFactory().get("/", headers={"X-Org": "x"})))
    assert job.scope_org_id == ""


@override_settings(DISPATCH_JOBS=SETTING)
def test_async_request_scope_is_stored_on_the_job():
    middleware = ScopeMiddleware(async_enqueue_view)
    request = RequestFactory().get("/", headers={"X-Org": "org-7"})
    response = _call_async(middleware, request)
    job = _job(response)
    assert (job.scope_app_id, job.scope_org_id) == ("shop", "org-7")


@override_settings(DISPATCH_JOBS=SETTING)
def test_async_middleware_around_a_sync_view():
    """A sync view under ASGI runs in a thread with a copy of the context."""
    middleware = ScopeMiddleware(sync_to_async(enqueue_view))
    response = _call_async(middleware, RequestFactory().get("/", headers={"X-Org": "o"}))
    assert _job(response).scope_org_id == "o"
