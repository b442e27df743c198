#!/usr/bin/env bash
# Start a throw-away PostgreSQL 15 cluster for tests and print its URL.
#
#   bash .ci/pg.sh [DATA_DIR]        # default /tmp/queen-pg, port ${PGPORT:-55432}
#   export QUEEN_TEST_DATABASE_URL=$(bash .ci/pg.sh | tail -1)
#   QUEEN_CI_PGDB=name bash .ci/pg.sh  # another database (default queen_test)
#
# Idempotent: if a server is already running on DATA_DIR it only prints the
# URL. Durability settings match production (fsync, synchronous_commit on),
# so measured numbers are honest. Stop it with:
#   su postgres -c "/usr/lib/postgresql/15/bin/pg_ctl -D DATA_DIR -m fast stop"
set -euo pipefail

PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
DATA=${1:-/tmp/queen-pg}
PORT=${PGPORT:-55432}
DB=${QUEEN_CI_PGDB:-queen_test}
URL="postgres://postgres@127.0.0.1:${PORT}/${DB}?sslmode=disable"

die() { echo "pg.sh: $*" >&2; exit 1; }
trap 'die "failed at line $LINENO (see ${DATA}/server.log if it exists)"' ERR

[ -x "$PGBIN/initdb" ] || die "no PostgreSQL binaries in $PGBIN"
id postgres >/dev/null 2>&1 || die "OS user postgres does not exist"

# Run a command as the postgres OS user (we are usually root).
as_pg() {
	if [ "$(id -un)" = postgres ]; then "$@"; else su postgres -s /bin/bash -c "$(printf '%q ' "$@")"; fi
}

mkdir -p "$DATA"
chown postgres: "$DATA"
chmod 700 "$DATA"

if [ ! -f "$DATA/PG_VERSION" ]; then
	as_pg "$PGBIN/initdb" -D "$DATA" -A trust -U postgres -E UTF8 --no-locale >"$DATA.initdb.log" 2>&1 ||
		die "initdb failed: $(cat "$DATA.initdb.log")"
	cat >>"$DATA/postgresql.conf" <<CONF
# queen-go test cluster (.ci/pg.sh)
listen_addresses = '127.0.0.1'
port = ${PORT}
unix_socket_directories = '${DATA}'
fsync = on
synchronous_commit = on
shared_buffers = 256MB
max_connections = 300
timezone = 'UTC'
CONF
fi

# An existing cluster keeps the port it was created with.
PORT=$(sed -n "s/^port = \([0-9]*\).*/\1/p" "$DATA/postgresql.conf" | tail -1)
[ -n "$PORT" ] || die "no port in $DATA/postgresql.conf"
URL="postgres://postgres@127.0.0.1:${PORT}/${DB}?sslmode=disable"

if ! as_pg "$PGBIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1; then
	as_pg "$PGBIN/pg_ctl" -D "$DATA" -l "$DATA/server.log" -w -t 60 start >/dev/null ||
		die "server did not start: $(tail -20 "$DATA/server.log" 2>/dev/null)"
fi

exists=$(as_pg "$PGBIN/psql" -h "$DATA" -p "$PORT" -U postgres -d postgres -Atc \
	"SELECT 1 FROM pg_database WHERE datname = '${DB}'") || die "cannot query the server on port $PORT"
if [ "$exists" != 1 ]; then
	as_pg "$PGBIN/createdb" -h "$DATA" -p "$PORT" -U postgres "$DB" ||
		die "createdb $DB failed"
fi

echo "$URL"
