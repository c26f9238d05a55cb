"""The metrics view: the fleet's gauges in Prometheus' text format.

Access: a request presenting ``Authorization: Bearer <METRICS_TOKEN>`` (how
Prometheus authenticates a scrape: ``authorization: {credentials: ...}`` in its
scrape config), or a logged-in staff user (a person looking at it in a browser).
Anyone else gets 403, and 401 asking for the bearer token when a token is set.
The token is compared in constant time.

The response is computed on each request by ``FleetCollector`` (bounded
queries: see ``fleet``). Importing this module without prometheus-client
raises ``MetricsUnavailable``: the URLconf that includes it fails at start-up
with the extra to install, not at the first scrape.
"""

from __future__ import annotations

import hmac

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from ..conf import settings
from . import prometheus_client
from .fleet import FleetCollector

_client = prometheus_client("The dispatch_jobs metrics view")
_registry = _client.CollectorRegistry(auto_describe=False)
_registry.register(FleetCollector())


def allowed(request: HttpRequest) -> bool:
    token = settings.metrics_token
    if token:
        given = request.headers.get("Authorization", "")
        scheme, _, credentials = given.partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(
            credentials.strip().encode(), token.encode()
        ):
            return True
    user = getattr(request, "user", None)
    return bool(user is not None and user.is_active and user.is_staff)


@require_GET
def metrics_view(request: HttpRequest) -> HttpResponse:
    """The exposition, in the format the scraper asks for (Prometheus text or
    OpenMetrics, by its Accept header)."""
    if not allowed(request):
        response = HttpResponse(
            "Forbidden: a staff login or the metrics token is required.\n",
            status=401 if settings.metrics_token else 403,
            content_type="text/plain; charset=utf-8",
        )
        if settings.metrics_token:
            response["WWW-Authenticate"] = 'Bearer realm="dispatch_jobs metrics"'
        return response
    encoder, content_type = _client.exposition.choose_encoder(request.headers.get("Accept", ""))
    response = HttpResponse(encoder(_registry), content_type=content_type)
    response["Cache-Control"] = "no-store"
    return response
