"""The operator's views' settings: the admin's bounded costs and redaction
(docs/admin.md), and the metrics view's token and caps (docs/observability.md)."""

from __future__ import annotations

from datetime import timedelta

from .. import limits
from ..setting_kinds import CallablePath, Duration, Integer, Secret
from .setting import ADMIN, METRICS, Setting


class AdminSettings:
    """The keys of the settings page's "The admin" and "Metrics" sections."""

    admin_statement_timeout = Setting(
        ADMIN,
        Duration(limits.TIMEOUT_MIN),
        timedelta(seconds=5),
        "PostgreSQL: admin list queries are cancelled after this long.",
        check="dispatch_jobs.E050",
    )
    admin_count_threshold = Setting(
        ADMIN,
        Integer(1),
        10_000,
        'Job lists count exactly up to this many rows, then show "10,000+".',
        check="dispatch_jobs.E051",
    )
    admin_bulk_cap = Setting(
        ADMIN,
        Integer(1),
        1_000,
        '"Apply to all matching" acts on at most this many jobs; more is refused.',
        check="dispatch_jobs.E051",
    )
    admin_scan_cap = Setting(
        ADMIN,
        Integer(1),
        10_000,
        "Dead-letter and usage summaries read at most this many newest rows.",
        check="dispatch_jobs.E051",
    )
    redact = Setting(
        ADMIN,
        CallablePath("(value, *, job, field) -> value"),
        "",
        "Dotted path of a callable(value, *, job, field) -> value that hides secrets in "
        'arguments and return values before the admin shows them ("" for none).',
        check="dispatch_jobs.E052",
    )

    # --- Metrics (docs/observability.md).
    metrics_token = Setting(
        METRICS,
        Secret(
            16,  # shorter is guessable by a scraper that tries
            "for staff-only access",
            hint="Make one with: python -c 'import secrets; print(secrets.token_urlsafe())'",
        ),
        "",
        'The bearer token Prometheus presents to the metrics view ("": staff only).',
        check="dispatch_jobs.E060",
    )
    metrics_count_cap = Setting(
        METRICS,
        Integer(1),
        10_000,
        "Queue depth gauges count ready jobs up to this many per queue and state.",
        check="dispatch_jobs.E061",
    )
