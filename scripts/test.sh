#!/usr/bin/env bash
# Run the whole test suite. The database comes from DATABASE_URL (default: SQLite):
#   scripts/test.sh
#   DATABASE_URL=postgres://postgres@127.0.0.1:5432/dispatch_jobs scripts/test.sh
#   DATABASE_URL=mysql://root@127.0.0.1:3306/dispatch_jobs scripts/test.sh
# Extra arguments go to pytest (scripts/test.sh -k claim). In parallel, as CI runs it:
# scripts/test.sh -n 2 --dist loadgroup (pytest-xdist; each worker its own test database).
source "$(dirname "${BASH_SOURCE[0]}")/_env.sh"
ensure_venv
echo "== dispatch_jobs tests on ${DATABASE_URL:-sqlite (default)}, Django $(python -c 'import django; print(django.get_version())')"
set +e
python -m pytest "$@"
status=$?
set -e
# pytest exits 5 when it collected nothing: that is a failure here, not a pass.
exit $status
