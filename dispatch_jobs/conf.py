"""Settings: one typed property per key of the ``DISPATCH_JOBS`` dict.

Read lazily on every access so ``override_settings`` works in tests. Defaults
live in ``DEFAULTS``; system checks (``checks.py``) validate user values.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings as django_settings

DEFAULTS: dict[str, Any] = {
    # Database alias the job tables live in.
    "DATABASE": "default",
    # Encoded payload cap (args + kwargs as JSON), in bytes.
    "MAX_PAYLOAD_BYTES": 64 * 1024,
    # Default job options.
    "DEFAULT_MAX_RETRIES": 3,
    "DEFAULT_TIMEOUT": timedelta(minutes=5),
    # Lease defaults (the seed's): a 30 s liveness window renewed every 10 s.
    "LEASE_TTL": timedelta(seconds=30),
    "HEARTBEAT_INTERVAL": timedelta(seconds=10),
    # A running job with no lease at all is adopted by reclaim after this much silence.
    "UNLEASED_RECLAIM_GRACE": timedelta(minutes=5),
    # Default page size of the cursor-paged job list.
    "LIST_PAGE_SIZE": 50,
}


class Settings:
    """Typed accessors over ``settings.DISPATCH_JOBS``."""

    @property
    def user_settings(self) -> dict[str, Any]:
        value = getattr(django_settings, "DISPATCH_JOBS", {})
        return value if isinstance(value, dict) else {}

    def get(self, key: str) -> Any:
        return self.user_settings.get(key, DEFAULTS[key])

    @property
    def database(self) -> str:
        return str(self.get("DATABASE"))

    @property
    def max_payload_bytes(self) -> int:
        return int(self.get("MAX_PAYLOAD_BYTES"))

    @property
    def default_max_retries(self) -> int:
        return int(self.get("DEFAULT_MAX_RETRIES"))

    @property
    def default_timeout(self) -> timedelta:
        return self.get("DEFAULT_TIMEOUT")  # type: ignore[no-any-return]

    @property
    def lease_ttl(self) -> timedelta:
        return self.get("LEASE_TTL")  # type: ignore[no-any-return]

    @property
    def heartbeat_interval(self) -> timedelta:
        return self.get("HEARTBEAT_INTERVAL")  # type: ignore[no-any-return]

    @property
    def unleased_reclaim_grace(self) -> timedelta:
        return self.get("UNLEASED_RECLAIM_GRACE")  # type: ignore[no-any-return]

    @property
    def list_page_size(self) -> int:
        return int(self.get("LIST_PAGE_SIZE"))


settings = Settings()
