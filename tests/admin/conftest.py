"""Users and clients for the admin tests: a superuser, a view-only user, and
operators holding exactly one action permission each."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client


def _user(username: str, *codenames: str, superuser: bool = False) -> User:
    if superuser:
        return User.objects.create_superuser(username, f"{username}@example.com", "pw")
    user = User.objects.create_user(username, password="pw", is_staff=True)
    perms = Permission.objects.filter(
        content_type__app_label="dispatch_jobs", codename__in=codenames
    )
    assert perms.count() == len(codenames), codenames
    user.user_permissions.add(*perms)
    return user


@pytest.fixture
def admin_client_(db) -> Client:
    client = Client()
    client.force_login(_user("root", superuser=True))
    return client


@pytest.fixture
def viewer_client(db) -> Client:
    """Can view jobs, queues, workers and usage; may do nothing."""
    client = Client()
    client.force_login(
        _user("viewer", "view_job", "view_queuecontrol", "view_worker", "view_usage")
    )
    return client


@pytest.fixture
def operator(db):
    """Build a client holding view_job plus the given permission codenames."""

    def build(*codenames: str) -> Client:
        client = Client()
        name = "op_" + "_".join(codenames)
        client.force_login(_user(name, "view_job", "view_queuecontrol", *codenames))
        return client

    return build


@pytest.fixture(autouse=True)
def _fresh_cache():
    """The dashboard caches its numbers for a few seconds: never across tests."""
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()
