"""Settings: every key of the ``DISPATCH_JOBS`` dict, declared once, in ``Settings``.

One entry per key: its section, its kind (the values it takes and the type it
reads as), its default, the system check id that refuses a bad value, and what
it does. From that entry follow the typed attribute (``settings.lease_ttl`` reads
``LEASE_TTL``), the check of its value (``checks.py``), ``DEFAULTS``, and its row
of docs/reference/settings.md (``scripts/mkdocs_hooks.py``). Adding a setting is
adding an entry; checks that relate two settings stay in ``checks.py``.

The entries are declared one module per part of the settings page
(``store_settings``, ``worker_settings``, ``admin_settings``, ``task_settings``);
``Settings`` gathers them, and ``setting`` holds the declaration itself.

A value is read from ``settings.DISPATCH_JOBS`` the first time and kept (an
enqueue reads several, and each read went through Django's lazy settings and the
kind's parsing); Django's ``setting_changed`` signal, which ``override_settings``
and pytest-django's ``settings`` fixture send, forgets them all, so tests still see
their overrides. Lists and dicts are read afresh every time.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings as django_settings
from django.core.signals import setting_changed
from django.dispatch import receiver

from .admin_settings import AdminSettings
from .setting import ADMIN, ARTIFACTS, METRICS, STORE, TASKS, WORKER, Section, Setting
from .store_settings import StoreSettings
from .task_settings import TaskSettings
from .worker_settings import WorkerSettings

__all__ = [
    "ADMIN",
    "ARTIFACTS",
    "DEFAULTS",
    "METRICS",
    "STORE",
    "TABLE",
    "TASKS",
    "WORKER",
    "Section",
    "Setting",
    "Settings",
    "declared_queues",
    "settings",
]


# The sections' bases last to first, so that the method resolution order walked
# backwards (below) is the order of the settings page.
class Settings(TaskSettings, AdminSettings, WorkerSettings, StoreSettings):
    """Typed accessors over ``settings.DISPATCH_JOBS``: one ``Setting`` per key."""

    def __init__(self) -> None:
        # The values read so far, by key (see the module's docstring).
        self.read_values: dict[str, Any] = {}
        # How many times the settings changed: what a cache of something derived
        # from them (the backend's validated tasks) compares.
        self.generation = 0

    def forget(self) -> None:
        """Read every value again at its next access."""
        self.read_values = {}
        self.generation += 1

    @property
    def user_settings(self) -> dict[str, Any]:
        value = getattr(django_settings, "DISPATCH_JOBS", {})
        return value if isinstance(value, dict) else {}

    def get(self, key: str) -> Any:
        """The raw value of ``key``: the user's, else the default."""
        return self.user_settings.get(key, DEFAULTS[key])


# Every setting, in the order declared (the order of the settings page): each
# section's class from the store's to the tasks', each in its own order.
TABLE: tuple[Setting[Any], ...] = tuple(
    value
    for section in reversed(Settings.__mro__)
    for value in vars(section).values()
    if isinstance(value, Setting)
)
DEFAULTS: dict[str, Any] = {setting.key: setting.default for setting in TABLE}

settings = Settings()


@receiver(setting_changed)
def _settings_changed(**kwargs: Any) -> None:
    # Any setting: a kind may read another (and a change outside tests is rare).
    settings.forget()


def declared_queues() -> set[str]:
    """``default`` and the queues the dispatch_jobs backends in ``TASKS`` name (their
    ``QUEUES``): the queues the admin and the metrics show even while empty."""
    names = {"default"}
    for config in getattr(django_settings, "TASKS", {}).values():
        if "dispatch_jobs" in str(config.get("BACKEND", "")):
            names.update(str(q) for q in config.get("QUEUES", []) or [])
    return names
