#!/usr/bin/env bash
# The soak scenario for 60 seconds on each engine: a
# steady push, pop and ack load on a queue with retention on; fails on any
# verification violation, and prints the first and last windows and RSS
# over time. The 30-minute soak is the same command with -duration 30m.
# Usage: .ci/soak.sh [postgres-url]  (without a URL, the embedded engine only)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(mktemp -d)/queen
go build -o "$bin" ./cmd/queen
port=16650

soak() {
  local name=$1; shift
  local data
  data=$(mktemp -d)
  env QUEEN_DATA_DIR="$data" PORT=$port QUEEN_BIND_ADDR=127.0.0.1 LOG_LEVEL=error RETENTION_INTERVAL=5000 "$@" \
    "$bin" &
  local pid=$!
  for _ in $(seq 100); do
    curl -fs -o /dev/null "127.0.0.1:$port/health" && break
    sleep 0.1
  done
  echo "--- soak on $name"
  local status=0
  "$bin" bench soak -url "http://127.0.0.1:$port" -duration 60s -rate 500 -producers 2 -consumers 2 \
    -partitions 8 -push-batch 10 -pop-batch 50 -window 15s -quiet || status=$?
  kill "$pid"
  wait "$pid" || true
  rm -rf "$data"
  return $status
}

soak embedded
if [ -n "${1:-}" ]; then
  soak postgres QUEEN_DATABASE_URL="$1" QUEEN_PG_SCHEMA="soak_$$"
fi
