#!/usr/bin/env bash
# Run the example project on SQLite: migrate, create an admin user (admin/admin),
# and serve the admin at http://127.0.0.1:8000/admin/ . Ctrl-C stops everything.
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh"
ensure_venv
export DJANGO_SETTINGS_MODULE=example_project.settings
python manage.py migrate --noinput
DJANGO_SUPERUSER_PASSWORD=admin python manage.py createsuperuser --noinput \
    --username admin --email admin@example.com 2>/dev/null || true
trap 'kill 0' EXIT
echo "admin: http://127.0.0.1:${PORT:-8000}/admin/  (user admin, password admin)"
python manage.py runserver "127.0.0.1:${PORT:-8000}"
