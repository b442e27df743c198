#!/usr/bin/env bash
# Build the broker's container image.
#
#   bash scripts/image.sh VERSION
#
# Builds a static binary (CGO_ENABLED=0, -trimpath, version linked in, so
# `queen version` and /health report VERSION) and an image from the
# Dockerfile, tagged queen-go:VERSION and labelled with VERSION and the
# commit. The engine is $CONTAINER_ENGINE (docker or podman), else the first
# of docker and podman that answers (`docker` on the PATH without a daemon
# does not count). It uses the engine's own storage and configuration
# (CONTAINERS_CONF, CONTAINERS_STORAGE_CONF apply to podman as usual).
# The last line printed is the image reference.
set -euo pipefail
cd "$(dirname "$0")/.."

version=${1:-}
if [ -z "$version" ] || [ "$version" = -h ] || [ "$version" = --help ]; then
  sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi

engine=${CONTAINER_ENGINE:-}
if [ -z "$engine" ]; then
  for e in docker podman; do
    if command -v "$e" >/dev/null 2>&1 && "$e" info >/dev/null 2>&1; then
      engine=$e
      break
    fi
  done
fi
if [ -z "$engine" ]; then
  echo "image.sh: no container engine answers (tried docker, podman); set CONTAINER_ENGINE" >&2
  exit 1
fi
if ! "$engine" info >/dev/null 2>&1; then
  echo "image.sh: $engine does not answer ('$engine info' failed)" >&2
  exit 1
fi

ca=""
for f in /etc/ssl/certs/ca-certificates.crt /etc/pki/tls/certs/ca-bundle.crt /etc/ssl/cert.pem; do
  if [ -s "$f" ]; then ca=$f; break; fi
done
if [ -z "$ca" ]; then
  echo "image.sh: no CA bundle found on this machine (install ca-certificates)" >&2
  exit 1
fi

revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
arch=${GOARCH:-$(go env GOARCH)}
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT

start=$(date +%s)
echo "image.sh: building the binary (linux/$arch, version $version)" >&2
CGO_ENABLED=0 GOOS=linux GOARCH=$arch GOFLAGS=-buildvcs=false \
  go build -trimpath -ldflags "-s -w -X main.version=$version" -o "$ctx/queen" ./cmd/queen
cp Dockerfile "$ctx/Dockerfile"
cp "$ca" "$ctx/ca-certificates.crt"
mkdir "$ctx/data"

tag="queen-go:$version"
echo "image.sh: building $tag with $engine" >&2
"$engine" build --platform "linux/$arch" \
  --build-arg "VERSION=$version" --build-arg "REVISION=$revision" \
  -t "$tag" "$ctx" >&2
echo "image.sh: done in $(( $(date +%s) - start )) s" >&2

# podman names local images localhost/NAME; print what the engine calls it.
ref=$("$engine" image inspect --format '{{index .RepoTags 0}}' "$tag" 2>/dev/null || echo "$tag")
echo "$ref"
