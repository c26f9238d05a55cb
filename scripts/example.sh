#!/usr/bin/env bash
# Run the example project on SQLite: migrate, create an admin user (admin/admin),
# enqueue demo jobs (they succeed, retry, fail permanently, time out, run long and
# wait), start a `runjobs` worker beside the admin, and serve the admin at
# http://127.0.0.1:8000/admin/ . Within a minute every job state is on show.
# Ctrl-C stops everything (the worker drains: it hands running jobs back).
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh"
ensure_venv
export DJANGO_SETTINGS_MODULE=example_project.settings
python manage.py migrate --noinput
DJANGO_SUPERUSER_PASSWORD=admin python manage.py createsuperuser --noinput \
    --username admin --email admin@example.com 2>/dev/null || true
python manage.py enqueue_demo_jobs
trap 'kill 0' EXIT
python manage.py runjobs --queue default --queue emails --queue reports \
    --concurrency 4 --shutdown-grace 5 &
echo "admin: http://127.0.0.1:${PORT:-8000}/admin/  (user admin, password admin)"
echo "more demo jobs: DJANGO_SETTINGS_MODULE=example_project.settings .venv/bin/python manage.py enqueue_demo_jobs"
python manage.py runserver "127.0.0.1:${PORT:-8000}"
