"""No query parameter, form field or URL part can make an admin page fail.

Every admin URL of the app is requested with every parameter the admin reads,
one at a time, set to each hostile value: NUL bytes (raw and as a JSON escape),
lone surrogates (as JSON escapes, and as broken UTF-8 in the URL), numbers no
column or float holds, negative and huge integers, very long strings. The
parameters are not listed by hand: they are the list filters' parameter names,
the change list's own variables (ours and Django's), and every string literal
the admin's modules read from ``request.GET``/``request.POST`` (found by parsing
their source). A page may answer 200 with a message, redirect, 400, 403, 404
or 405; it may never raise (the test client re-raises a view's exception) or
answer 5xx.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from urllib.parse import quote

import pytest
from django.contrib import admin
from django.contrib.admin import helpers
from django.contrib.admin.views import main as changelist_vars
from django.urls import URLPattern, URLResolver, reverse

import dispatch_jobs.admin
from dispatch_jobs import store
from dispatch_jobs.admin import paging
from dispatch_jobs.models import Usage

from . import builders

pytestmark = pytest.mark.django_db

# Values as they go on the wire (already percent-encoded where they must be).
HOSTILE = {
    "nul": quote("billing\x00.tasks"),
    "nul-escape": quote("\\u0000"),
    "json-nul": quote('{"user_id": "\\u0000"}'),
    "json-surrogate": quote('["\\ud800"]'),
    "broken-utf8": "%ED%A0%80",  # a surrogate encoded as UTF-8: not valid UTF-8
    "inf": "1e999",
    "json-inf": quote("[1e999]"),
    "nan": "NaN",
    "json-nan": quote('{"x": NaN}'),
    "json-deep": quote("[" * 5_000 + "]" * 5_000),
    "minus-one": "-1",
    "huge": "9" * 40,
    "hash-huge": quote("#" + "9" * 40),
    "ids": quote("1,-5,99999999999999999999999"),
    "long": "x" * 5_000,
}


def _admin_sources() -> Iterator[ast.AST]:
    for path in sorted(Path(dispatch_jobs.admin.__file__).parent.glob("*.py")):
        yield ast.parse(path.read_text(), filename=str(path))


def read_parameters() -> set[str]:
    """String literals the admin passes to ``<x>.GET.get``, ``<x>.POST.get`` or
    ``data.get`` (the action view's GET-or-POST), and ``GET[...]``."""
    names: set[str] = set()
    for tree in _admin_sources():
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            if node.func.attr != "get" or not node.args:
                continue
            owner = node.func.value
            on_request = isinstance(owner, ast.Attribute) and owner.attr in ("GET", "POST")
            reads_request = on_request or (isinstance(owner, ast.Name) and owner.id == "data")
            first = node.args[0]
            if reads_request and isinstance(first, ast.Constant) and isinstance(first.value, str):
                names.add(first.value)
    return names


def changelist_parameters() -> set[str]:
    """The list filters' parameters of every dispatch_jobs admin, and the
    variables a change list reads (ours, then Django's)."""
    names = {paging.CURSOR_VAR, paging.COUNT_VAR, paging.SORT_VAR}
    # Django's action form on a change list.
    names |= {helpers.ACTION_CHECKBOX_NAME, "action", "select_across", "index"}
    names |= {
        changelist_vars.ALL_VAR,
        changelist_vars.ORDER_VAR,
        changelist_vars.PAGE_VAR,
        changelist_vars.SEARCH_VAR,
        changelist_vars.ERROR_FLAG,
        *changelist_vars.IGNORED_PARAMS,
    }
    for model, model_admin in admin.site._registry.items():
        if model._meta.app_label == "dispatch_jobs":
            for spec in model_admin.list_filter:
                names.add(spec.parameter_name)
    return names


def admin_urls() -> list[tuple[str, str]]:
    """(name, route) of every admin URL of the app."""

    def walk(patterns: list, prefix: str = "") -> Iterator[tuple[str, str]]:
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                yield from walk(pattern.url_patterns, prefix + str(pattern.pattern))
            elif isinstance(pattern, URLPattern) and pattern.name:
                yield pattern.name, prefix + str(pattern.pattern)

    return [
        (name, route)
        for name, route in walk(admin.site.get_urls())
        if name.startswith("dispatch_jobs_") or name == "app_list"
    ]


def test_the_parameter_lists_are_derived_not_empty():
    # A guard on the derivation itself: these are read somewhere in the admin today.
    assert {"task", "error", "window", "ids", "next", "queue"} <= read_parameters()
    assert {"state", "queue", "task", "app", "org", "worker", "q", "cursor"} <= (
        changelist_parameters()
    )
    assert len(admin_urls()) >= 25


@pytest.fixture
def objects() -> dict[str, str]:
    """One of each row, so detail, history and value URLs reach real objects."""
    failed = builders.failed(1, name="shop.tasks.charge_card", payload={"args": [7], "kwargs": {}})
    builders.completed(1, name="shop.tasks.send_receipt")
    builders.enqueue(2, name="shop.tasks.sync_stock", queue="emails")
    builders.running(1)
    [usage] = store.record_usages(
        [
            Usage(
                job_id=failed[0].pk,
                name="shop.tasks.charge_card",
                queue="default",
                attempt=1,
                status="failed",
                wall_time=timedelta(seconds=2),
            )
        ]
    )
    store.pause_queue("emails")
    store.register_worker("w-fuzz", hostname="h", pid=1, queues=["default"], concurrency=1)
    return {
        "job": str(failed[0].pk),
        "usage": str(usage.pk),
        "queuecontrol": "emails",
        "worker": "w-fuzz",
    }


# The views that act on a POST (the rest answer 405 or ignore the body).
POSTED = {
    "dispatch_jobs_job_changelist",
    "dispatch_jobs_queue_pause",
    "dispatch_jobs_queue_resume",
    "dispatch_jobs_job_action",
}


def _url(name: str, route: str, objects: dict[str, str], object_id: str | None = None) -> str:
    kwargs: dict[str, str] = {}
    if "<str:name>" in route:
        kwargs["name"] = "retry"
    if "<str:field>" in route:
        kwargs["field"] = "payload"
    if "app_label" in route:
        kwargs["app_label"] = "dispatch_jobs"
    if "object_id" in route:
        model = name.removeprefix("dispatch_jobs_").split("_")[0]
        kwargs["object_id"] = objects[model] if object_id is None else object_id
    return reverse(f"admin:{name}", kwargs=kwargs)


class Failures(list):
    """Every request that raised or answered 5xx, reported together."""

    def request(self, what: str, send) -> bool:  # noqa: ANN001
        """Send; True when the answer was an ordinary page (200)."""
        try:
            response = send()
        except Exception as exc:  # noqa: BLE001 - the view raised: that is the finding
            self.append(f"{what}: {type(exc).__name__}: {str(exc)[:200]}")
            return False
        if response.status_code not in (200, 302, 400, 403, 404, 405):
            self.append(f"{what}: HTTP {response.status_code}")
        return response.status_code == 200


def _targets() -> list[tuple[str, set[str]]]:
    """Each URL with the parameters to try on it: on change lists, everything a
    change list reads; elsewhere, everything a view reads; the add, change,
    delete and history pages read none (their object ids are tried below)."""
    targets = []
    for name, _route in admin_urls():
        if name.endswith("_changelist"):
            targets.append((name, changelist_parameters() | read_parameters()))
        elif not name.endswith(("_add", "_change", "_delete", "_history")):
            targets.append((name, read_parameters()))
    return targets


@pytest.mark.parametrize(("url", "parameters"), _targets(), ids=[n for n, _ in _targets()])
def test_no_parameter_value_breaks_a_page(admin_client_, objects, url, parameters):
    """Each hostile value in each parameter. Parameters that, given a harmless
    value, still leave an ordinary page (200) are tried all at once; those that
    redirect or refuse the request on their own (which would hide what the
    others do) are tried one by one, as are all of them whenever the combined
    page is not an ordinary one."""
    target = _url(url, dict(admin_urls())[url], objects)
    failures = Failures()
    for method in ("GET", "POST") if url in POSTED else ("GET",):
        alone = [
            name
            for name in sorted(parameters)
            if not failures.request(
                f"{method} {name}=x", _sender(admin_client_, method, target, f"{name}=x")
            )
        ]
        together = [name for name in sorted(parameters) if name not in alone]
        for label, value in HOSTILE.items():
            combined = "&".join(f"{name}={value}" for name in together)
            send = _sender(admin_client_, method, target, combined)
            singles = alone if failures.request(f"{method} all={label}", send) else parameters
            for name in sorted(singles):
                failures.request(
                    f"{method} {name}={label}",
                    _sender(admin_client_, method, target, f"{name}={value}"),
                )
    assert failures == []


def _sender(client, method: str, target: str, query: str):  # noqa: ANN202
    if method == "GET":
        return lambda: client.get(f"{target}?{query}")
    return lambda: client.post(
        target, f"{query}&confirm=yes", content_type="application/x-www-form-urlencoded"
    )


@pytest.mark.parametrize(
    "url", [name for name, route in admin_urls() if "<path:object_id>" in route]
)
def test_no_object_id_breaks_a_page(admin_client_, objects, url):
    route = dict(admin_urls())[url]
    failures = Failures()
    for label, value in HOSTILE.items():
        target = _url(url, route, objects, object_id="placeholder")
        target = target.replace("placeholder", value.replace("%2F", "/"))
        failures.request(f"GET object_id={label}", _sender(admin_client_, "GET", target, ""))
    assert failures == []


def test_a_refused_value_is_named_in_a_message_and_the_rest_still_filters(admin_client_):
    wanted = builders.failed(1, name="shop.tasks.charge_card")[0]
    builders.enqueue(2, name="shop.tasks.sync_stock")
    url = reverse("admin:dispatch_jobs_job_changelist")
    response = admin_client_.get(f"{url}?state=failed&queue=de%00fault")
    assert response.status_code == 200
    shown = [str(m) for m in response.context["messages"]]
    assert any("not a valid filter for 'queue'" in m and "NUL" in m for m in shown), shown
    assert [job.pk for job in response.context["cl"].result_list] == [wanted.pk]


@pytest.mark.parametrize(
    ("term", "reason"),
    [
        ('{"user_id": "\\u0000"}', "NUL"),
        ('["\\ud800"]', "lone surrogate"),
        ("[1e999]", "too large"),
        ('{"x": NaN}', "not a JSON value"),
        ("[" * 500 + "]" * 500, "nested"),
    ],
)
def test_an_argument_search_the_database_cannot_take_is_explained(admin_client_, term, reason):
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("argument search is PostgreSQL's (elsewhere it says so and finds nothing)")
    builders.enqueue(1)
    response = admin_client_.get(reverse("admin:dispatch_jobs_job_changelist"), {"q": term})
    assert response.status_code == 200
    shown = [str(m) for m in response.context["messages"]]
    assert any("not valid JSON" in m and reason in m for m in shown), shown
