#!/usr/bin/env bash
# Benchmark dispatch_jobs beside django-tasks-db, Procrastinate and PgQueuer.
#   bench/run.sh            full run (3 repetitions, 50,000-job drains; about 20 min)
#   bench/run.sh --quick    small sizes, 1 repetition (under 3 min once the venvs exist)
# Needs PostgreSQL on 127.0.0.1:5432 (user postgres, trust) and, for the MariaDB
# rows, MariaDB on 127.0.0.1:3306 (root, no password); see docs/performance.md.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../scripts/_env.sh
source "$HERE/../scripts/_env.sh"   # cd's to the repository root; defines find_python
if ! PY="$(find_python)"; then
    echo "the bench needs Python 3.12 or newer; none found (set PYTHON=/path/to/python3.12)." >&2
    exit 1
fi
if ! pkg-config --exists libmariadb 2>/dev/null && ! pkg-config --exists mysqlclient 2>/dev/null; then
    need_mysql_headers   # dispatch_jobs' venv builds mysqlclient for the MariaDB rows
fi
exec "$PY" bench/run.py --python "$PY" "$@"
