#!/usr/bin/env bash
# Build the release: archives, checksums, deb and rpm packages, in dist/.
#
#   bash scripts/release.sh VERSION
#
# Runs GoReleaser (.goreleaser.yaml) locally; nothing is tagged, signed or
# published. Archives for linux/amd64, linux/arm64, darwin/amd64,
# darwin/arm64 (tar.gz) and windows/amd64 (zip), each with the binary,
# LICENSE and README.md; dist/checksums.txt; .deb and .rpm for Linux amd64
# and arm64 with the systemd unit and /etc/queen/queen.env. The same commit
# gives byte-identical files from any folder. GoReleaser is built once with
# the local Go into $QUEEN_TOOLS (default ~/.cache/queen-go/tools), or taken
# from $GORELEASER.
set -euo pipefail
cd "$(dirname "$0")/.."

version=${1:-}
if [ -z "$version" ] || [ "$version" = -h ] || [ "$version" = --help ]; then
  sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
version=${version#v}

goreleaser_version=v2.15.1
tools=${QUEEN_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/queen-go/tools}
gr=${GORELEASER:-$tools/goreleaser-$goreleaser_version}
if [ ! -x "$gr" ]; then
  echo "release.sh: building GoReleaser $goreleaser_version into $tools (once; a few minutes)" >&2
  mkdir -p "$tools"
  tmpbin=$(mktemp -d)
  GOBIN=$tmpbin GOFLAGS=-buildvcs=false go install "github.com/goreleaser/goreleaser/v2@$goreleaser_version"
  mv "$tmpbin/goreleaser" "$gr"
  rm -rf "$tmpbin"
fi

# Every file time in dist/ is the commit's, so a commit always gives the
# same bytes.
QUEEN_RELEASE_EPOCH=$(git log -1 --format=%ct)
QUEEN_RELEASE_DATE=$(TZ=UTC git log -1 --date=format-local:%Y-%m-%dT%H:%M:%SZ --format=%cd)
export QUEEN_RELEASE_EPOCH QUEEN_RELEASE_DATE SOURCE_DATE_EPOCH=$QUEEN_RELEASE_EPOCH

start=$(date +%s)
QUEEN_VERSION=$version "$gr" release --snapshot --clean --skip=publish,announce,sign \
  --parallelism "${RELEASE_PARALLELISM:-2}" >&2
(cd dist && sha256sum --quiet -c checksums.txt) || { echo "release.sh: checksums do not verify" >&2; exit 1; }
echo "release.sh: dist/ written in $(( $(date +%s) - start )) s" >&2
(cd dist && ls -l *.tar.gz *.zip *.deb *.rpm checksums.txt)
