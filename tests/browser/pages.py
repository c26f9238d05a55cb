"""Steps every browser test takes: an operator logging in, a click that loads a page."""

from __future__ import annotations

from django.contrib.auth.models import User

USERNAME = "ops"
PASSWORD = "correct horse"


def follow(page, selector: str) -> None:
    """Click something that loads a new page, and wait until it has loaded."""
    with page.expect_navigation():
        page.click(selector)


def log_in(page, live_server, next_path: str = "/admin/") -> None:
    """Create the superuser ``ops`` and log in as it, landing on ``next_path``."""
    User.objects.create_superuser(USERNAME, f"{USERNAME}@example.com", PASSWORD)
    page.goto(f"{live_server.url}/admin/login/?next={next_path}")
    page.fill("#id_username", USERNAME)
    page.fill("#id_password", PASSWORD)
    follow(page, "input[type=submit]")
    page.wait_for_selector("#site-name")
