"""Test settings. The database comes from DATABASE_URL (default: a SQLite file),
e.g. ``postgres://postgres@127.0.0.1:5432/dispatch_jobs`` or
``mysql://root@127.0.0.1:3306/dispatch_jobs``.
"""

import sys
from pathlib import Path

import environ

BASE_DIR = Path(__file__).resolve().parent.parent
env = environ.Env()

SECRET_KEY = "dispatch-jobs-tests"
DEBUG = False
USE_TZ = True
TIME_ZONE = "UTC"

_sqlite_file = BASE_DIR / ".test-data" / "dispatch_jobs.sqlite3"
DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{_sqlite_file}")}
_db = DATABASES["default"]
# Worker processes started by tests/worker/ connect to the test database by name.
_db["NAME"] = env.str("DISPATCH_TEST_DB_NAME", default=_db["NAME"])
if _db["ENGINE"].endswith("sqlite3"):
    _name = Path(_db["NAME"])
    _name.parent.mkdir(parents=True, exist_ok=True)
    _db["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    # A file, not :memory:, so several processes can share the test database.
    _db["TEST"] = {"NAME": str(_name.with_name(f"test_{_name.name}"))}
elif _db["ENGINE"].endswith("postgresql") and env.bool("DISPATCH_TEST_PREPARE", default=False):
    # The store's prepared statements (docs/deployment.md): psycopg prepares each
    # statement the first time it runs, so every test exercises them.
    _db.setdefault("OPTIONS", {})["prepare_threshold"] = 0
elif _db["ENGINE"].endswith("mysql"):
    _db.setdefault("OPTIONS", {})["charset"] = "utf8mb4"
    _db["TEST"] = {"CHARSET": "utf8mb4", "COLLATION": "utf8mb4_general_ci"}

# tests/engines/: the engine conformance suite runs once per database in one
# run: the default one, and each URL in DISPATCH_TEST_ENGINES (comma-separated)
# as an extra alias named after its engine (engine_postgresql, engine_mysql ...).
# In the test session only: the processes the tests start (runjobs, a fresh
# interpreter) inherit the environment but not the test databases' names, and
# Django's checks would connect to the extra aliases' unsuffixed databases.
for _url in env.list("DISPATCH_TEST_ENGINES", default=[]) if "pytest" in sys.modules else []:
    _extra = env.db_url_config(_url)
    _vendor = _extra["ENGINE"].rsplit(".", 1)[-1]
    if _vendor == "mysql":
        _extra.setdefault("OPTIONS", {})["charset"] = "utf8mb4"
        _extra["TEST"] = {"CHARSET": "utf8mb4", "COLLATION": "utf8mb4_general_ci"}
    elif _vendor == "sqlite3":
        _extra["OPTIONS"] = {"transaction_mode": "IMMEDIATE", "timeout": 20}
        _extra["TEST"] = {"NAME": str(Path(_extra["NAME"]).with_name("test_engines.sqlite3"))}
    DATABASES[f"engine_{_vendor}"] = _extra

# tests/worker/test_pgbouncer.py: worker processes whose default connection goes
# through PgBouncer in transaction mode (configured as Django documents for it) and
# whose LISTEN side, when DISPATCH_TEST_LISTEN_URL is set, goes direct.
if env.bool("DISPATCH_TEST_POOLED", default=False):
    _db["DISABLE_SERVER_SIDE_CURSORS"] = True
if env.str("DISPATCH_TEST_LISTEN_URL", default=""):
    DATABASES["listen"] = env.db("DISPATCH_TEST_LISTEN_URL")
    DATABASES["listen"]["TEST"] = {"MIRROR": "default"}
    DISPATCH_JOBS = {"LISTEN_DATABASE": "listen"}

# tests/worker/test_subprocess_rung.py: a worker whose children run one job each.
if env.str("DISPATCH_TEST_CHILD_MAX_JOBS", default=""):
    DISPATCH_JOBS = {
        **globals().get("DISPATCH_JOBS", {}),
        "CHILD_MAX_JOBS": env.int("DISPATCH_TEST_CHILD_MAX_JOBS"),
    }

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "dispatch_jobs",
    "tests.jobs",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]
ROOT_URLCONF = "tests.urls"
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
# Artifacts (tests/artifacts/): the default FileSystemStorage writes here, in the
# test run and in the worker processes it starts alike.
MEDIA_ROOT = env.str("DISPATCH_TEST_MEDIA_ROOT", default=str(BASE_DIR / ".test-data" / "media"))
# A worker process's input cache, when a test names one (tests/artifacts/test_worker_inputs.py).
if env.str("DISPATCH_TEST_ARTIFACT_CACHE_DIR", default=""):
    DISPATCH_JOBS = {
        **globals().get("DISPATCH_JOBS", {}),
        "ARTIFACT_CACHE_DIR": env.str("DISPATCH_TEST_ARTIFACT_CACHE_DIR"),
    }
# The tasks backend under test; the extra queues are used by tests/backend/.
TASKS = {
    "default": {
        "BACKEND": "dispatch_jobs.backend.DispatchBackend",
        "QUEUES": ["default", "high", "low", "emails"],
    }
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
# Django's own advice for test suites: the default PBKDF2 hasher spends about a second
# of CPU per password by design, and the admin tests create a user or two per test.
# No test here is about password storage.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
