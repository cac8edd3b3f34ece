#!/usr/bin/env bash
# Starts a throwaway PostgreSQL for the Temporal cluster: installs Debian's package when initdb is
# missing, initdb's a fresh data dir under $1 and starts it on 127.0.0.1:$2 as the `postgres` user
# (PostgreSQL refuses to run as root), then creates the `temporal` role. The databases themselves
# are created by the schema tool. `postgres.sh --install-only` installs the package and stops (for
# callers that start it where no registry can be reached: test:multihost's network namespaces).
set -euo pipefail
# shellcheck source=scripts/apt.sh
. "$(dirname "$0")/../apt.sh"
state="$1"
port="${2:-}"
pg_bin() {
  local dir
  for dir in /usr/lib/postgresql/*/bin; do [ -x "$dir/initdb" ] && echo "$dir" && return; done
  return 1
}
if ! bindir=$(pg_bin); then
  echo "installing PostgreSQL from Debian's packages" >&2
  apt_get install -y postgresql >&2 || {
    apt_get update >&2
    apt_get install -y postgresql >&2
  }
  bindir=$(pg_bin)
fi
[ "$state" = --install-only ] && exit 0
as_postgres() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
data="$state/pgdata"
mkdir -p "$data"
[ "$(id -u)" -eq 0 ] && chown postgres:postgres "$state" "$data"
chmod 700 "$data"
as_postgres "$bindir/initdb" -D "$data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >"$state/initdb.log" 2>&1 ||
  { cat "$state/initdb.log" >&2; exit 1; }
# fsync stays on: the durability tests kill services, and the store must keep what it acknowledged.
as_postgres "$bindir/pg_ctl" -D "$data" -l "$state/postgres.log" -w -t 60 \
  -o "-h 127.0.0.1 -p $port -k $state -c max_connections=200" start >&2
as_postgres "$bindir/psql" -h 127.0.0.1 -p "$port" -U postgres -v ON_ERROR_STOP=1 -q \
  -c "CREATE ROLE temporal LOGIN SUPERUSER PASSWORD 'temporal'" >&2
echo "$bindir" >"$state/pg_bindir"
