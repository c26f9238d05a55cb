"""A real browser for the admin: Debian's Chromium driven by Playwright.

``scripts/test.sh`` installs the ``chromium`` package when it is missing (we never
run ``playwright install``: it downloads a browser build, which cannot be done
here). Screenshots go to ``test-artifacts/browser/<database>/``.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import connection, connections

CHROMIUM = os.environ.get("DISPATCH_JOBS_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "browser"
LAUNCH_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture
def browser_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    """A fresh page in a Chromium with a fresh profile directory."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    if not (shutil.which(CHROMIUM) or Path(CHROMIUM).exists()):
        pytest.skip(
            f"no Chromium at {CHROMIUM}: run the suite through scripts/test.sh, which "
            "installs Debian's chromium package"
        )
    # Playwright's sync API keeps an event loop running in this thread; the test's
    # own database calls (seeding, assertions) are still plain synchronous code.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_api.sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path / "profile"),
            executable_path=CHROMIUM,
            headless=True,
            args=LAUNCH_ARGS,
            viewport={"width": 1600, "height": 900},
        )
        context.set_default_timeout(20_000)
        try:
            yield context.new_page()
        finally:
            context.close()
            # While Playwright's loop runs, Django hands this code context-local
            # connections; close them here, or the test database cannot be dropped.
            connections.close_all()


@pytest.fixture
def screenshot(browser_page) -> object:
    folder = ARTIFACTS / connection.vendor
    folder.mkdir(parents=True, exist_ok=True)

    def take(name: str) -> Path:
        target = folder / f"{name}.png"
        browser_page.screenshot(path=str(target), full_page=True)
        return target

    return take


@pytest.fixture(autouse=True)
def _fresh_cache() -> Iterator[None]:
    """The dashboard caches its numbers for a few seconds: never across tests."""
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()
