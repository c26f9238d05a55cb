"""Include in the project's URLconf::

path("metrics/", include("dispatch_jobs.metrics.urls")),
"""

from django.urls import path

from .views import metrics_view

app_name = "dispatch_jobs_metrics"
urlpatterns = [path("", metrics_view, name="metrics")]
