#!/usr/bin/env bash
# Builds the Temporal server and its SQL schema tool from the Go module proxy into a cache keyed by
# version, so later runs on the same machine reuse the binaries. Prints the bin directory.
set -euo pipefail
version="${ATTUNE_TEMPORAL_SERVER_VERSION:-v1.32.0}"
export PATH="/usr/local/go/bin:$PATH"
bin="${XDG_CACHE_HOME:-$HOME/.cache}/attune/temporal-server-${version}/bin"
if [ -x "$bin/server" ] && [ -x "$bin/temporal-sql-tool" ]; then
  echo "$bin"
  exit 0
fi
mkdir -p "$bin"
# One build at a time: the suites that run side by side (npm test) may all ask for it on a cold machine;
# the second waits for the first and takes its binary.
exec 9>"$bin/../build.lock"
flock 9
if [ -x "$bin/server" ] && [ -x "$bin/temporal-sql-tool" ]; then
  echo "$bin"
  exit 0
fi
start=$(date +%s)
# The build's module and build caches go with it (gigabytes that only a rebuild would use; the
# binaries are what is kept): -modcacherw lets them be removed.
caches="$(mktemp -d)"
trap 'rm -rf "$caches"' EXIT
export GOMODCACHE="$caches/mod" GOCACHE="$caches/build"
# nice: the build shares the machine's cores with everything else.
GOBIN="$bin" GOFLAGS="-mod=mod -modcacherw" nice -n 10 go install "go.temporal.io/server/cmd/server@${version}" >&2
GOBIN="$bin" GOFLAGS=-modcacherw nice -n 10 go install "go.temporal.io/server/cmd/tools/sql@${version}" >&2
mv "$bin/sql" "$bin/temporal-sql-tool"
echo "built Temporal server ${version} in $(($(date +%s) - start)) s" >&2
echo "$bin"
