#!/usr/bin/env bash
# Check the package as a release would ship it, away from the checkout:
#   1. build the sdist, and the wheel from that sdist, into a temporary directory;
#   2. `twine check --strict`, every classifier a known one, and the wheel holding every
#      file the package tracks (migrations, templates, static files, py.typed);
#   3. install the wheel alone into a clean virtualenv;
#   4. follow the README there: `django-admin startproject`, the install settings,
#      `migrate`, enqueue a job defined in the new project, `runjobs --burst`, and
#      check that the job is SUCCESSFUL.
# It prints one line, "release check: PASS ..." or "release check: FAIL ...", and exits
# non-zero on failure.
#
#   scripts/check_release.sh                       # SQLite, the newest Django
#   DATABASE_URL=postgres://postgres@127.0.0.1:5432/dj_release scripts/check_release.sh
#   DJANGO_SERIES=5.2 scripts/check_release.sh     # Django 5.2 LTS + the backport extra
#   PYTHON_SERIES=3.12 scripts/check_release.sh    # the clean virtualenv on Python 3.12
#
# The PostgreSQL (or MariaDB) database named in DATABASE_URL is dropped and created
# afresh. RELEASE_DEFAULT_SQLITE=1 keeps startproject's own DATABASES instead of the
# SQLite options docs/install.md gives. KEEP_RELEASE_DIR=1 keeps the temporary directory
# for a look afterwards.
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh"

fail() {
    echo "release check: FAIL at $step: $*"
    exit 1
}
step="setup"

# The build tools come from the project's own virtualenv (the [release] extra); the
# wheel is installed into a new one. The series only changes the clean virtualenv.
series="${DJANGO_SERIES:-}"
DJANGO_SERIES="" PYTHON_SERIES="" ensure_venv
py="$(find_python)" || fail "no Python ${PYTHON_SERIES:-3.12 or newer} for the clean virtualenv"
work="$(mktemp -d "${TMPDIR:-/tmp}/dispatch-jobs-release.XXXXXX")"
if [ -z "${KEEP_RELEASE_DIR:-}" ]; then trap 'rm -rf "$work"' EXIT; else echo "keeping $work" >&2; fi
log="$work/log"
# Run a step's command with its output kept in the log; on failure show that output.
quiet() {
    local out="$work/step.out" rc=0
    "$@" >"$out" 2>&1 || rc=$?
    cat "$out" >>"$log"
    [ "$rc" = 0 ] || { grep -v '^WARNING: Location' "$out" | tail -n 30 >&2; return 1; }
}

step="build"
quiet python -m build --outdir "$work/dist" "$ROOT" || fail "python -m build (output above)"
wheel="$(ls "$work"/dist/*.whl)"
sdist="$(ls "$work"/dist/*.tar.gz)"

step="twine check"
quiet python -m twine check --strict "$wheel" "$sdist" || fail "twine check --strict (output above)"

step="contents"
contents="$(python "$ROOT/scripts/release_contents.py" "$ROOT" "$wheel" "$sdist")" ||
    fail "${contents:-release_contents.py failed (above)}"

step="clean virtualenv"
"$py" -m venv "$work/venv"
venv_py="$work/venv/bin/python"
extras=()
case "${DATABASE_URL:-}" in
    postgres*) extras+=(postgres) ;;
    mysql*) extras+=(mysql) ;;
esac
pins=()
if [ -n "$series" ]; then
    pins+=("Django~=$series.0")
    case "$series" in 5.*) extras+=(django52) ;; esac
fi
spec="$wheel"
if [ ${#extras[@]} -gt 0 ]; then spec="dispatch-jobs[$(IFS=,; echo "${extras[*]}")] @ file://$wheel"; fi
quiet "$venv_py" -m pip install --disable-pip-version-check "$spec" "${pins[@]}" ||
    fail "pip install $spec ${pins[*]} (output above)"

step="startproject"
site="$work/site"
mkdir -p "$site"
cd "$site" # away from the checkout: nothing may import from it
quiet "$work/venv/bin/django-admin" startproject mysite . || fail "django-admin startproject"
quiet "$venv_py" manage.py startapp greetings || fail "manage.py startapp"
quiet "$venv_py" "$ROOT/scripts/release_site.py" configure "$site" ||
    fail "configuring the project (output above)"

step="migrate"
quiet "$venv_py" manage.py migrate --noinput || fail "manage.py migrate (output above)"

step="enqueue"
quiet "$venv_py" manage.py shell -c 'from greetings.tasks import send_welcome
print(send_welcome.enqueue(42).id)' || fail "enqueue (output above)"
job_id="$(tail -n 1 "$work/step.out")"
[ -n "$job_id" ] || fail "enqueue printed no job id"

step="runjobs"
# The README's worker command, in burst mode: run what is ready, then exit.
quiet timeout 120 "$venv_py" manage.py runjobs --queue default --queue emails \
    --concurrency 8 --budget cpu=4,memory=8Gi --burst || fail "runjobs --burst (output above)"

step="result"
outcome="$("$venv_py" "$ROOT/scripts/release_site.py" result "$site" "$job_id" 2>"$work/result.err")" ||
    { tail -n 30 "$work/result.err" >&2; fail "${outcome:-a traceback (above)}"; }

echo "release check: PASS dispatch-jobs $contents; wheel installed alone in a clean virtualenv: $outcome"
