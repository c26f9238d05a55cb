#!/usr/bin/env bash
# Run the example project on SQLite: migrate, create an admin user (admin/admin),
# enqueue demo jobs (they succeed, retry, fail permanently, time out, run long and
# wait), start a `runjobs` worker beside the admin, and serve the admin at
# http://127.0.0.1:$PORT/admin/ (PORT defaults to 8000; if 8000 is busy another
# free port is chosen and printed). Within a minute every job state is on show.
#
# Installs only what the example needs (dispatch_jobs, Django, django-environ) into
# .venv-example: no root, no C compiler, no database driver, no browser.
# Ctrl-C stops the server and drains the worker (running jobs finish or, after 5 s,
# are handed back) before the script exits.
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh"

# The port first: a busy PORT fails here, before anything is installed.
if [ -n "${PORT:-}" ]; then port="$(pick_port "$PORT" yes)"; else port="$(pick_port 8000 no)"; fi
ensure_example_venv
# The example is the SQLite demo whatever the shell exports (it has no PostgreSQL driver).
unset DATABASE_URL
export DJANGO_SETTINGS_MODULE=example_project.settings

step "migrating the example database (example_project/db.sqlite3)"
python manage.py migrate --noinput -v 0
DJANGO_SUPERUSER_PASSWORD=admin python manage.py createsuperuser --noinput \
    --username admin --email admin@example.com >/dev/null 2>&1 || true
step "enqueuing demo jobs"
python manage.py enqueue_demo_jobs

# Each child in a session of its own: a terminal's Ctrl-C reaches only this script,
# which then sends the worker ONE SIGTERM (a second signal would skip the drain).
detached() { exec python -c 'import os, sys; os.setsid(); os.execvp(sys.argv[1], sys.argv[1:])' "$@"; }

step "starting a runjobs worker (it serves every queue TASKS names) and the admin on port $port"
detached python manage.py runjobs --concurrency 4 --shutdown-grace 5 &
worker=$!
detached python manage.py runserver --noreload "127.0.0.1:$port" &
server=$!

stopping=no
stop() {
    [ "$stopping" = yes ] && return
    stopping=yes
    step "stopping: the worker drains (running jobs finish, or are handed back after 5 s)"
    kill -TERM "$server" 2>/dev/null || true
    kill -TERM "$worker" 2>/dev/null || true
    wait "$worker" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    step "stopped"
}
trap 'stop; exit 0' INT TERM
trap stop EXIT

echo "admin: http://127.0.0.1:$port/admin/  (user admin, password admin; port $port)"
echo "more demo jobs: DJANGO_SETTINGS_MODULE=example_project.settings .venv-example/bin/python manage.py enqueue_demo_jobs"
echo "Ctrl-C to stop."
# Until Ctrl-C, or until the worker or the server ends on its own (an error).
set +e
wait -n "$worker" "$server"
status=$?
set -e
echo "the worker or the server exited (status $status); stopping the other." >&2
stop
exit 1
