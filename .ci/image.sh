#!/usr/bin/env bash
# Container image check: builds the image with scripts/image.sh and runs it.
#
#   bash .ci/image.sh [DATABASE_URL]
#
# On the embedded engine with a volume: /health reports the version, a push
# and a pop work, SIGTERM with a long poll parked exits 0 within 10 s, and a
# new container on the same volume still has the messages. With a
# DATABASE_URL (a PostgreSQL on this host), the image runs on it too.
#
# podman on these machines needs the runc runtime, the cgroupfs manager and
# no default rlimits (see docs/operating.md); this script writes that
# configuration to a temporary CONTAINERS_CONF unless one is set.
set -euo pipefail
cd "$(dirname "$0")/.."
db_url=${1:-}

fail() { echo "FAIL: $*" >&2; exit 1; }
say() { printf -- '--- %s\n' "$*"; }

engine=${CONTAINER_ENGINE:-podman}
command -v "$engine" >/dev/null || fail "$engine is not installed (apt-get install -y podman runc)"
export CONTAINER_ENGINE=$engine
tmp=$(mktemp -d)
if [ "$engine" = podman ] && [ -z "${CONTAINERS_CONF:-}" ]; then
  printf '[containers]\ndefault_ulimits = []\n[engine]\nruntime = "runc"\ncgroup_manager = "cgroupfs"\n' >"$tmp/containers.conf"
  export CONTAINERS_CONF=$tmp/containers.conf
fi
"$engine" info >/dev/null 2>&1 || fail "$engine does not answer: $("$engine" info 2>&1 | tail -1)"

version="ci-$(git rev-parse --short HEAD 2>/dev/null || echo dev)"
vol="queen-ci-$$"
names=()
cleanup() {
  for n in "${names[@]}"; do "$engine" rm -f "$n" >/dev/null 2>&1 || true; done
  "$engine" volume rm -f "$vol" >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT

say "build"
start=$(date +%s)
ref=$(bash scripts/image.sh "$version" | tail -n 1)
echo "image $ref built in $(( $(date +%s) - start )) s"
size=$("$engine" image inspect --format '{{.Size}}' "$ref")
echo "image size: $size bytes"
[ "$size" -lt $((40 * 1024 * 1024)) ] || fail "image is $size bytes, over 40 MB"
labels=$("$engine" image inspect --format '{{json .Labels}}' "$ref")
for want in '"org.opencontainers.image.version":"'"$version"'"' \
            '"org.opencontainers.image.licenses":"Apache-2.0"' \
            '"org.opencontainers.image.source":"https://'; do
  grep -qF "$want" <<<"$labels" || fail "image labels lack $want: $labels"
done
user=$("$engine" image inspect --format '{{.Config.User}}' "$ref")
case "$user" in ""|0|root|0:0) fail "image runs as root (User=$user)";; esac

port=$(( 20000 + RANDOM % 20000 ))
base="http://127.0.0.1:$port"
run() { # name, extra args…
  local name=$1; shift
  names+=("$name")
  "$engine" run -d --name "$name" "$@" "$ref" >/dev/null
}
wait_health() {
  for _ in $(seq 1 100); do
    if body=$(curl -fsS "$base/health" 2>/dev/null); then echo "$body"; return 0; fi
    sleep 0.2
  done
  "$engine" logs "${names[-1]}" >&2 || true
  fail "no answer on $base/health"
}
push() { # queue, transactionId
  code=$(curl -s -o "$tmp/push" -w '%{http_code}' -X POST "$base/api/v1/push" \
    -d '{"items":[{"queue":"'"$1"'","transactionId":"'"$2"'","payload":{"n":1}}]}')
  [ "$code" = 201 ] || fail "push to $1 answered $code: $(cat "$tmp/push")"
}
pop_has() { # queue, transactionId
  code=$(curl -s -o "$tmp/pop" -w '%{http_code}' "$base/api/v1/pop/queue/$1?batch=10&wait=false")
  [ "$code" = 200 ] || fail "pop of $1 answered $code"
  grep -qF "\"$2\"" "$tmp/pop" || fail "pop of $1 lacks $2: $(cat "$tmp/pop")"
}

say "embedded engine on a volume"
"$engine" volume create "$vol" >/dev/null
run q1 --network slirp4netns:port_handler=slirp4netns -p "127.0.0.1:$port:6632" -v "$vol:/data"
health=$(wait_health)
echo "$health"
grep -qF "\"version\":\"$version\"" <<<"$health" || fail "/health does not report $version"
grep -qF '"engine":"sqlite"' <<<"$health" || fail "/health does not report the embedded engine"
push orders order-1
push kept kept-1

say "SIGTERM with a long poll parked"
curl -s -o /dev/null "$base/api/v1/pop/queue/idle?wait=true&timeout=30000" &
poll=$!
parked=""
for _ in $(seq 1 50); do  # until the broker counts the parked poll
  metrics=$(curl -s "$base/metrics/prometheus" || true)
  if grep -qE '^queen_pop_waiting [1-9]' <<<"$metrics"; then parked=yes; break; fi
  sleep 0.1
done
[ -n "$parked" ] || fail "the long poll never parked, so SIGTERM would not be tested with one waiting"
start=$(date +%s%N)
"$engine" kill --signal TERM q1 >/dev/null
"$engine" wait q1 >/dev/null
elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
code=$("$engine" inspect --format '{{.State.ExitCode}}' q1)
wait "$poll" || true
echo "exit $code after $elapsed_ms ms"
[ "$code" = 0 ] || fail "SIGTERM exit code $code, want 0"
[ "$elapsed_ms" -lt 10000 ] || fail "SIGTERM took $elapsed_ms ms, want under 10 s"

say "a new container on the same volume"
run q2 --network slirp4netns:port_handler=slirp4netns -p "127.0.0.1:$port:6632" -v "$vol:/data"
wait_health >/dev/null
pop_has orders order-1
pop_has kept kept-1
"$engine" rm -f q2 >/dev/null

if [ -n "$db_url" ]; then
  say "PostgreSQL"
  run q3 --network host -e "QUEEN_DATABASE_URL=$db_url" -e "PORT=$port" -e QUEEN_BIND_ADDR=127.0.0.1
  health=$(wait_health)
  grep -qF '"engine":"postgres' <<<"$health" || fail "/health does not report PostgreSQL: $health"
  push "image-$$" pg-1
  pop_has "image-$$" pg-1
else
  echo "no DATABASE_URL given: the PostgreSQL run is skipped"
fi
say "image checks passed ($ref, $size bytes)"
