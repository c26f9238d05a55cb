"""The example project: dispatch_jobs in a real Django project.

Configuration comes from the environment (django-environ):
    DATABASE_URL   default: SQLite in WAL mode at example_project/db.sqlite3
    SECRET_KEY, DEBUG
"""

from pathlib import Path

import environ

BASE_DIR = Path(__file__).resolve().parent
env = environ.Env(DEBUG=(bool, True))

SECRET_KEY = env("SECRET_KEY", default="dispatch-jobs-example-not-secret")
DEBUG = env("DEBUG")
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
USE_TZ = True
TIME_ZONE = "UTC"

DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}")}
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # IMMEDIATE transactions keep claims exclusive across worker processes; WAL
    # lets the admin read while workers write; the timeout waits out short locks.
    DATABASES["default"]["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "dispatch_jobs",
    "example_project.demo",
]
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]
ROOT_URLCONF = "example_project.urls"
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
STATIC_URL = "/static/"
# Django's tasks framework, run by dispatch_jobs (docs/tasks.md).
TASKS = {
    "default": {
        "BACKEND": "dispatch_jobs.backend.DispatchBackend",
        "QUEUES": ["default", "emails", "reports"],
    }
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
# No LOGGING: runjobs then prints its own lines and Django's django.tasks ones in
# one format, as many as its -v asks for (docs/worker.md, "Logs").
