"""Template filters and tags of the admin console: one date format, human
durations, the dashboard (``{% load dispatch_jobs_admin %}``)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django import template
from django.contrib import messages

from ..admin import dashboard, display
from ..admin.safety import bounded_queries
from ..exceptions import QueryTooBroad
from ..readback import nearest_values

register = template.Library()


@register.filter
def dj_time(value: datetime | str | None) -> str:
    return display.moment(value)


@register.filter
def dj_duration(value: timedelta | float | None) -> str:
    return display.duration(value)


@register.inclusion_tag("dispatch_jobs/admin/dashboard.html", takes_context=True)
def dispatch_jobs_dashboard(context: template.Context) -> dict[str, Any]:
    request = context["request"]
    if not request.user.has_perm("dispatch_jobs.view_job"):
        return {"hidden": True}
    try:
        with bounded_queries(), nearest_values():
            shown = dashboard.cached_context()
    except QueryTooBroad as exc:
        messages.warning(request, str(exc))
        return {"notice": str(exc)}
    return {"request": request, **shown}
