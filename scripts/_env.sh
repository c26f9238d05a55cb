# Shared set-up for scripts/*.sh: find Python >= 3.12 and make a virtualenv.
#   ensure_venv          .venv: the project with its test and dev extras (scripts/test.sh;
#                        DJANGO_SERIES's virtualenvs: the test extra only),
#                        installing the MariaDB headers and Chromium with apt when root
#   ensure_example_venv  .venv-example: the project and the example's one extra, nothing
#                        to compile, no apt, no root (scripts/example.sh)
# Sourced, not run.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

# PYTHON_SERIES=3.12 insists on that minor version (CI runs Django 5.2 on the oldest
# supported Python, the rest on the newest found).
find_python() {
    local candidate check='sys.version_info >= (3, 12)'
    if [ -n "${PYTHON_SERIES:-}" ]; then
        check="'%d.%d' % sys.version_info[:2] == '${PYTHON_SERIES}'"
    fi
    for candidate in "${PYTHON:-}" python3.13 python3.12 python3 \
        "$HOME"/.pyenv/versions/3.13*/bin/python3 "$HOME"/.pyenv/versions/3.12*/bin/python3 \
        /usr/local/bin/python3.13 /usr/local/bin/python3.12 /usr/bin/python3.13 /usr/bin/python3.12; do
        [ -n "$candidate" ] || continue
        command -v "$candidate" >/dev/null 2>&1 || [ -x "$candidate" ] || continue
        if "$candidate" -c "import sys; sys.exit(0 if $check else 1)" 2>/dev/null; then
            echo "$candidate"
            return 0
        fi
    done
    return 1
}

need_mysql_headers() {
    # mysqlclient compiles against the MariaDB client library.
    if ! pkg-config --exists libmariadb 2>/dev/null && ! pkg-config --exists mysqlclient 2>/dev/null; then
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
            echo "installing the MariaDB client headers (libmariadb-dev) ..." >&2
            apt-get update -qq >/dev/null
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libmariadb-dev pkg-config >/dev/null
        else
            echo "mysqlclient needs the MariaDB/MySQL client headers: install libmariadb-dev and pkg-config." >&2
            exit 1
        fi
    fi
}

need_chromium() {
    # The admin's browser tests drive Debian's Chromium through Playwright (never
    # `playwright install`, which downloads a browser build).
    if [ ! -x /usr/bin/chromium ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "installing Chromium for the browser tests ..." >&2
        apt-get update -qq >/dev/null
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    fi
}

# DJANGO_SERIES=6.0 scripts/test.sh runs the suite against Django 6.0 in its own
# virtualenv (.venv-django6.0); DJANGO_SERIES=5.2 against Django 5.2 LTS plus the
# django-tasks backport (the [django52] extra); unset, the newest supported Django in .venv.
# PYTHON_SERIES=3.12 picks the interpreter too (.venv-django5.2-py3.12).
ensure_venv() {
    local py stamp want venv
    venv=".venv${DJANGO_SERIES:+-django$DJANGO_SERIES}${PYTHON_SERIES:+-py$PYTHON_SERIES}"
    if ! py="$(find_python)"; then
        echo "dispatch_jobs needs Python ${PYTHON_SERIES:-3.12 or newer}; none found (set PYTHON=/path/to/python3.12)." >&2
        exit 1
    fi
    need_mysql_headers
    need_chromium
    stamp="$venv/.installed"
    want="$( (cat pyproject.toml; echo "${DJANGO_SERIES:-}") | sha1sum | cut -c1-40)"
    if [ ! -x "$venv/bin/python" ]; then
        echo "creating $venv with $("$py" --version) ..." >&2
        "$py" -m venv "$venv"
        "$venv/bin/python" -m pip install -q --upgrade pip >/dev/null 2>&1 || true
    fi
    # Reinstall (in place) whenever pyproject.toml changed since the last install.
    if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
        echo "installing dispatch_jobs and its test tools into $venv ..." >&2
        local django_pin=() extras="dev"
        # An older Django's virtualenv runs the suite only: the test extra, without the
        # dev tools (linters, type checker, profilers, release tools) .venv holds.
        [ -n "${DJANGO_SERIES:-}" ] && django_pin=("Django~=${DJANGO_SERIES}.0") && extras="test"
        # Before 6.0, django.tasks comes from the backport.
        case "${DJANGO_SERIES:-}" in 5.*) extras="test,django52" ;; esac
        # --no-compile: Python compiles what the suite imports on first use; compiling
        # every installed module up front (mypy, Playwright, ...) took half the install.
        if ! "$venv/bin/python" -m pip install -q --no-compile -e ".[$extras]" "${django_pin[@]}" \
            >"$venv/pip.log" 2>&1; then
            grep -v '^WARNING: Location' "$venv/pip.log" >&2
            echo "installing into $venv failed (log above)" >&2
            exit 1
        fi
        echo "$want" > "$stamp"
    fi
    export PATH="$ROOT/$venv/bin:$PATH"
}

step() { echo "==> $*" >&2; }

# The example's virtualenv: Django and django-environ, nothing else (no database
# driver, no browser, no dev tools), so it needs no root and no C headers.
ensure_example_venv() {
    local py stamp want venv=".venv-example"
    if ! py="$(find_python)"; then
        echo "the example needs Python 3.12 or newer; none found (set PYTHON=/path/to/python3.12)." >&2
        exit 1
    fi
    stamp="$venv/.installed"
    want="$( (cat pyproject.toml; echo example) | sha1sum | cut -c1-40)"
    if [ ! -x "$venv/bin/python" ]; then
        step "creating $venv with $("$py" --version)"
        if ! "$py" -m venv "$venv"; then
            echo "could not create $venv: this Python has no venv module (Debian: apt install python3-venv)." >&2
            exit 1
        fi
    fi
    if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
        step "installing dispatch_jobs with Django and django-environ into $venv (pip's progress follows)"
        # pip's own lines (Collecting/Downloading/Installing) are the progress.
        if ! "$venv/bin/python" -m pip install --disable-pip-version-check --progress-bar on \
            -e ".[example]"; then
            echo "installing into $venv failed (pip's messages above)" >&2
            exit 1
        fi
        echo "$want" > "$stamp"
    fi
    export PATH="$ROOT/$venv/bin:$PATH"
}

# pick_port WANTED EXPLICIT: print WANTED when it is free on 127.0.0.1. When it is
# busy: if EXPLICIT is "yes" (the user set PORT), fail with one line; otherwise print
# a free port chosen by the system and say on stderr which one and why.
pick_port() {
    local wanted=$1 explicit=$2 py
    py="$(find_python)" || py=python3
    "$py" - "$wanted" "$explicit" <<'PYEOF'
import socket, sys

wanted, explicit = int(sys.argv[1]), sys.argv[2] == "yes"

def free(port):
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True

if free(wanted):
    print(wanted)
elif explicit:
    sys.exit(f"port {wanted} on 127.0.0.1 is busy (PORT={wanted}): stop what uses it or choose another PORT.")
else:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    print(f"port {wanted} on 127.0.0.1 is busy: using port {port} instead (set PORT to choose).", file=sys.stderr)
    print(port)
PYEOF
}
