#!/usr/bin/env bash
# Runs the whole test suite: `go test ./...` plus a note on what was skipped.
# Extra arguments go to go test (CI adds -race). The PostgreSQL engine's tests
# run when QUEEN_TEST_DATABASE_URL names a database; `bash .ci/pg.sh` starts a
# throw-away PostgreSQL 15 and prints such a URL.
set -euo pipefail
cd "$(dirname "$0")/.."

status=0
go test "$@" ./... || status=$?

if [ -z "${QUEEN_TEST_DATABASE_URL:-}" ]; then
  cat >&2 <<'NOTE'

skipped: the PostgreSQL engine's tests (the postgres subtests in internal/store/enginetest, the tests of
internal/store/postgres, and every test in internal/e2e: two brokers on one database, cross-broker wake-up, outage, shared maintenance modes), because
QUEEN_TEST_DATABASE_URL is not set. To run them too:
    export QUEEN_TEST_DATABASE_URL=$(bash .ci/pg.sh | tail -n 1)
    bash scripts/test.sh
NOTE
fi
if [ "${QUEEN_REQUIRE_BROWSER:-}" != 1 ] && ! command -v chromium >/dev/null 2>&1; then
  cat >&2 <<'NOTE'

skipped: the dashboard's browser tests (TestBrowserViews and TestBrowserSignIn in internal/dashboard), because
chromium is not on PATH. To run them too: apt-get install -y chromium. They write a screenshot of every view to
$QUEEN_DASHBOARD_SCREENSHOTS (default /tmp/queen-dashboard-screenshots).
NOTE
fi
if [ -z "${QUEEN_LATENCY_TESTS:-}" ]; then
  cat >&2 <<'NOTE'

skipped: the latency tests TestBoundedQueueDelete and TestBoundedRetention (a queue of 1,000,000 messages deleted,
or swept by retention, under load; minutes, and meaningful only when nothing else runs) and the long test
TestRetentionWaves (200,000 messages through retention, disk space checked); the timing bounds of the wake-up and
pop-latency tests, which ran above as behaviour checks only. CI runs them alone; to run them:
    bash scripts/latency.sh
NOTE
fi
exit $status
