#!/usr/bin/env bash
# Stops the cluster in $1 (the four services, then PostgreSQL) and removes its state directory.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
state="$1"
[ -d "$state" ] || exit 0
for service in frontend worker matching history; do bash "$here/service.sh" stop "$state" "$service"; done
if [ -f "$state/pg_bindir" ]; then
  runuser -u postgres -- "$(cat "$state/pg_bindir")/pg_ctl" -D "$state/pgdata" -m fast -w stop >/dev/null 2>&1 ||
    "$(cat "$state/pg_bindir")/pg_ctl" -D "$state/pgdata" -m fast -w stop >/dev/null
fi
rm -rf "$state"
