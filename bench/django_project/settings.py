"""Settings for the Django-based systems under benchmark.

Environment:
    BENCH_SYSTEM         dispatch_jobs | django_tasks_db
    BENCH_DATABASE_URL   postgres://..., mysql://..., sqlite:////path
    BENCH_CONN_MAX_AGE   "" (Django's default, 0: a connection per request or
                         worker loop turn) or "none" (persistent connections)
"""

from __future__ import annotations

import importlib.util
import os

from bench.dburl import database_settings

SYSTEM = os.environ.get("BENCH_SYSTEM", "dispatch_jobs")
SECRET_KEY = "dispatch-jobs-bench"
DEBUG = False
ALLOWED_HOSTS = ["*"]
USE_TZ = True
TIME_ZONE = "UTC"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
ROOT_URLCONF = "bench.django_project.urls"
STATIC_URL = "/static/"


DATABASES = {
    "default": database_settings(
        os.environ.get(
            "BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/bench_dispatch_jobs"
        )
    )
}
if os.environ.get("BENCH_CONN_MAX_AGE", "").lower() == "none":
    DATABASES["default"]["CONN_MAX_AGE"] = None
# dispatch_jobs on PostgreSQL: a direct connection, so the alias allows prepared
# statements and the store prepares its enqueue INSERT (docs/deployment.md,
# "Prepared statements"); BENCH_DJ_PREPARE=0 measures without.
if (
    SYSTEM == "dispatch_jobs"
    and DATABASES["default"]["ENGINE"].endswith("postgresql")
    and os.environ.get("BENCH_DJ_PREPARE", "1") != "0"
):
    DATABASES["default"].setdefault("OPTIONS", {})["prepare_threshold"] = 5

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
]
if SYSTEM == "dispatch_jobs":
    INSTALLED_APPS.append("dispatch_jobs")
    # The tasks backend is being built beside this bench; until it exists the
    # bench enqueues through the store and Django keeps its default backend.
    if importlib.util.find_spec("dispatch_jobs.backend") is not None:
        TASKS = {
            "default": {
                "BACKEND": os.environ.get(
                    "BENCH_DISPATCH_JOBS_BACKEND", "dispatch_jobs.backend.DispatchBackend"
                ),
                "QUEUES": ["default"],
            }
        }
    # The latency scenario's "polling" mode turns LISTEN/NOTIFY off.
    DISPATCH_JOBS = {"NOTIFY": os.environ.get("BENCH_DJ_NOTIFY", "1") != "0"}
elif SYSTEM == "django_tasks_db":
    INSTALLED_APPS.append("django_tasks_db")
    TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend", "QUEUES": ["default"]}}
else:
    raise RuntimeError(f"BENCH_SYSTEM={SYSTEM!r} is not a Django-based system")

MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": "WARNING"},
}
