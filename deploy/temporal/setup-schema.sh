#!/bin/sh
# One-shot schema set-up for Temporal on PostgreSQL (run by the temporal-admin-tools service).
# Safe to run on every `docker compose up`: creating what exists is skipped, and update-schema
# brings an existing schema up to the admin-tools image's version (how an upgrade gets its changes).
set -eu
: "${POSTGRES_SEEDS:?}" "${POSTGRES_USER:?}" "${SQL_PASSWORD:?}" "${DB_PORT:=5432}"
schema_root=/etc/temporal/schema/postgresql/v12
sql() { temporal-sql-tool --plugin postgres12 --ep "$POSTGRES_SEEDS" -p "$DB_PORT" -u "$POSTGRES_USER" "$@"; }

for db in temporal temporal_visibility; do
  dir=temporal
  [ "$db" = temporal_visibility ] && dir=visibility
  # create and setup-schema fail when the database or its version table already exist: that is the
  # restart case, and update-schema below still fails loudly on a real problem (auth, connection).
  sql --db "$db" create >/dev/null 2>&1 || echo "database $db exists"
  sql --db "$db" setup-schema -v 0.0 >/dev/null 2>&1 || echo "schema of $db exists"
  sql --db "$db" update-schema -d "$schema_root/$dir/versioned"
done
echo 'temporal schema ready'
