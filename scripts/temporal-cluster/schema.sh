#!/usr/bin/env bash
# Creates the two databases and loads Temporal's schemas (default store and SQL visibility) with the
# server's own schema tool, using the schema files embedded in it: setup-schema at 0.0, then
# update-schema to the newest version of that server release.
set -euo pipefail
bin="$1"
port="$2"
sql() {
  "$bin/temporal-sql-tool" --plugin postgres12 --ep 127.0.0.1 -p "$port" -u temporal --pw temporal --quiet "$@"
}
for store in temporal:temporal temporal_visibility:visibility; do
  db="${store%%:*}"
  name="postgresql/v12/${store##*:}"
  sql --db "$db" create-database
  sql --db "$db" setup-schema -v 0.0
  sql --db "$db" update-schema --schema-name "$name"
done
