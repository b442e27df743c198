#!/usr/bin/env bash
# Packaging checks: the systemd unit, the alerting rules, and the release.
#
#   bash .ci/packaging.sh
#
# Installs what it needs from Debian's packages (prometheus for promtool,
# rpm for listing .rpm files) and fails loudly when it cannot.
set -euo pipefail
cd "$(dirname "$0")/.."
fail() { echo "FAIL: $*" >&2; exit 1; }
say() { printf -- '--- %s\n' "$*"; }
need() { # command, Debian package
  command -v "$1" >/dev/null && return 0
  echo "$1 missing: installing Debian's $2"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$2" >/dev/null || fail "could not install $2 (for $1)"
}

say "systemd unit"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
CGO_ENABLED=0 go build -o "$tmp/queen" ./cmd/queen
# verify checks that ExecStart exists: point it at the binary just built.
sed "s#/usr/bin/queen#$tmp/queen#" deploy/systemd/queen.service >"$tmp/queen.service"
if command -v systemd-analyze >/dev/null; then
  out=$(systemd-analyze verify "$tmp/queen.service" 2>&1) || fail "systemd-analyze verify: $out"
  [ -z "$out" ] || fail "systemd-analyze verify warns: $out"
  echo "systemd-analyze verify: no warnings"
else
  echo "systemd-analyze is not installed: checking the unit's directives statically"
  for d in NoNewPrivileges=yes ProtectSystem=strict StateDirectory= Restart=on-failure \
           EnvironmentFile= TimeoutStopSec= DynamicUser=yes; do
    grep -q "^$d" deploy/systemd/queen.service || fail "queen.service lacks $d"
  done
fi

say "alerting rules"
need promtool prometheus
promtool check rules deploy/prometheus/queen-alerts.yml
(cd deploy/prometheus && promtool test rules queen-alerts_test.yml)

say "release archives and packages"
need rpm rpm
need dpkg-deb dpkg
version="0.0.0-ci.$(git rev-parse --short HEAD)"
start=$(date +%s)
bash scripts/release.sh "$version"
echo "release.sh took $(( $(date +%s) - start )) s"
cd dist
for want in linux_amd64.tar.gz linux_arm64.tar.gz darwin_amd64.tar.gz darwin_arm64.tar.gz windows_amd64.zip \
            linux_amd64.deb linux_arm64.deb linux_amd64.rpm linux_arm64.rpm; do
  ls ./*"$want" >/dev/null 2>&1 || fail "dist/ lacks *$want"
done
sha256sum -c checksums.txt
for a in *.tar.gz; do
  echo "$a:"; tar -tzvf "$a"
  list=$(tar -tzf "$a")
  for f in queen LICENSE README.md; do grep -qx "$f" <<<"$list" || fail "$a lacks $f"; done
done
for p in *.deb; do echo "$p:"; dpkg-deb -c "$p"; done
for p in *.rpm; do
  echo "$p:"; rpm -qpl "$p"
  conf=$(rpm -qpc "$p")
  grep -qx /etc/queen/queen.env <<<"$conf" || fail "$p does not mark /etc/queen/queen.env as configuration"
done
conf=$(dpkg-deb -I ./*linux_amd64.deb conffiles)
grep -qx /etc/queen/queen.env <<<"$conf" ||
  fail "the .deb does not mark /etc/queen/queen.env as a configuration file"
tar -xzf ./*linux_amd64.tar.gz -C "$tmp" queen
printed=$("$tmp/queen" version)
grep -qx "queen $version" <<<"$printed" || fail "the released binary does not print version $version"
