"""The metrics view: who may read it, in which format, and without the extra."""

from __future__ import annotations

import importlib
import sys

import pytest
from django.contrib.auth.models import User
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from dispatch_jobs.exceptions import MetricsUnavailable

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.metrics.urls")]

URL = "/metrics/"
TOKEN = "s3cret-token-for-the-scraper"


def names(body: bytes) -> set[str]:
    return {family.name for family in text_string_to_metric_families(body.decode())}


def test_a_staff_user_reads_the_exposition(client: Client):
    client.force_login(User.objects.create_user("ops", is_staff=True))
    response = client.get(URL)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=")
    assert response["Cache-Control"] == "no-store"
    assert {"dispatch_jobs_fleet_up", "dispatch_jobs_queue_ready_jobs"} <= names(response.content)


@pytest.mark.parametrize("staff", [False, None])
def test_anyone_else_is_refused_without_a_token(client: Client, staff):
    if staff is not None:
        client.force_login(User.objects.create_user("someone", is_staff=staff))
    response = client.get(URL)
    assert response.status_code == 403
    assert b"dispatch_jobs" not in response.content


def test_the_bearer_token_admits_a_scraper(client: Client, settings):
    settings.DISPATCH_JOBS = {"METRICS_TOKEN": TOKEN}
    response = client.get(URL, headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 200
    assert "dispatch_jobs_fleet_up" in names(response.content)


@pytest.mark.parametrize(
    "header",
    [None, f"Bearer {TOKEN}x", f"Basic {TOKEN}", "Bearer", "Bearer \x00", f"Bearer {TOKEN[:-1]}"],
)
def test_a_wrong_or_missing_token_asks_for_one(client: Client, settings, header):
    settings.DISPATCH_JOBS = {"METRICS_TOKEN": TOKEN}
    headers = {"Authorization": header} if header is not None else {}
    response = client.get(URL, headers=headers)
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_openmetrics_when_the_scraper_asks_for_it(admin_client: Client):
    response = admin_client.get(URL, headers={"Accept": "application/openmetrics-text"})
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/openmetrics-text")
    assert response.content.endswith(b"# EOF\n")


def test_only_get(admin_client: Client):
    assert admin_client.post(URL).status_code == 405


def test_without_prometheus_client_the_urlconf_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "prometheus_client", None)  # as if not installed
    monkeypatch.delitem(sys.modules, "dispatch_jobs.metrics.views", raising=False)
    monkeypatch.delitem(sys.modules, "dispatch_jobs.metrics.urls", raising=False)
    with pytest.raises(MetricsUnavailable, match=r"pip install 'dispatch-jobs\[metrics\]'"):
        importlib.import_module("dispatch_jobs.metrics.urls")
