"""A project URLconf that includes the metrics view as the docs say."""

from django.urls import include, path

urlpatterns = [path("metrics/", include("dispatch_jobs.metrics.urls"))]
