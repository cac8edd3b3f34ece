#!/usr/bin/env bash
# Builds the MinIO server (the tests' real S3 server) from the Go module proxy into a cache keyed by version,
# so later runs on the same machine reuse the binary. Prints the binary's path.
# MinIO publishes no semver tags, so the version is a pseudo-version of one commit.
set -euo pipefail
version="${ATTUNE_MINIO_VERSION:-v0.0.0-20260212201848-7aac2a2c5b7c}"
export PATH="/usr/local/go/bin:$PATH"
bin="${XDG_CACHE_HOME:-$HOME/.cache}/attune/minio-${version}/bin"
if [ -x "$bin/minio" ]; then
  echo "$bin/minio"
  exit 0
fi
mkdir -p "$bin"
# One build at a time: the suites that run side by side (npm test) may all ask for it on a cold machine;
# the second waits for the first and takes its binary.
exec 9>"$bin/../build.lock"
flock 9
if [ -x "$bin/minio" ]; then
  echo "$bin/minio"
  exit 0
fi
start=$(date +%s)
# nice: the build shares the machine's cores with everything else. Built into a temporary name and moved,
# so an interrupted build never leaves a half-written binary that the check above would take.
# The build's module and build caches go with it (about 2 GB that only a rebuild would use; the
# binary is what is kept): -modcacherw lets them be removed.
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
GOBIN="$tmp/bin" GOMODCACHE="$tmp/mod" GOCACHE="$tmp/build" GOFLAGS="-mod=mod -modcacherw" CGO_ENABLED=0 \
  nice -n 10 go install -trimpath "github.com/minio/minio@${version}" >&2
mv "$tmp/bin/minio" "$bin/minio"
echo "built MinIO ${version} in $(($(date +%s) - start)) s" >&2
echo "$bin/minio"
