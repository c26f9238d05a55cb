"""A minimal Django project for the Django-based systems (dispatch_jobs and
django-tasks-db). ``BENCH_SYSTEM`` picks the app, ``BENCH_DATABASE_URL`` the
database, ``BENCH_CONN_MAX_AGE`` persistent connections."""
