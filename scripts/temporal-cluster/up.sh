#!/usr/bin/env bash
# Brings up a Temporal cluster on PostgreSQL: builds (or reuses) the server,
# starts PostgreSQL, loads the schemas, writes the config, starts frontend, history, matching and
# worker as four processes, waits for the frontend, creates the `default` namespace and registers
# Attune's search attributes. Usage: up.sh STATE_DIR. The services listen on ATTUNE_CLUSTER_HOST
# (default 127.0.0.1; PostgreSQL always on 127.0.0.1 beside them). Writes STATE_DIR/env (shell assignments:
# ATTUNE_TEST_TEMPORAL_ADDRESS, ATTUNE_TEST_TEMPORAL_CLUSTER) and prints its path.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
state="$1"
host="${ATTUNE_CLUSTER_HOST:-127.0.0.1}"
mkdir -p "$state"
say() { printf '[temporal-cluster] %s\n' "$*" >&2; }

t0=$(date +%s)
bin=$(bash "$here/build-server.sh")
echo "$bin" >"$state/server_bin"
say "server binaries in $bin ($(($(date +%s) - t0)) s)"

mapfile -t ports < <(node "$here/free-ports.mjs" 9)
pg_port=${ports[0]}
printf '%s %s %s\n' frontend "${ports[1]}" "${ports[2]}" history "${ports[3]}" "${ports[4]}" \
  matching "${ports[5]}" "${ports[6]}" worker "${ports[7]}" "${ports[8]}" >"$state/ports"

bash "$here/postgres.sh" "$state" "$pg_port"
echo "$pg_port" >"$state/pg_port"
say "PostgreSQL on 127.0.0.1:$pg_port"
bash "$here/schema.sh" "$bin" "$pg_port" >"$state/schema.log" 2>&1 || { cat "$state/schema.log" >&2; exit 1; }
say "schemas loaded"
bash "$here/config.sh" "$state" "$pg_port" "$state/ports" "$host"

# history first: the frontend waits for a history member of the ring. The others start once history
# has written the cluster metadata: services that start together race to insert it, and the losers
# exit (a duplicate key in cluster_metadata_info).
bash "$here/service.sh" start "$state" history
deadline=$(($(date +%s) + 60))
until [ -n "$(PGPASSWORD=temporal "$(cat "$state/pg_bindir")/psql" -h 127.0.0.1 -p "$pg_port" -U temporal \
  -d temporal -Atc 'select 1 from cluster_metadata_info limit 1' 2>/dev/null)" ]; do
  if ! kill -0 "$(cat "$state/pids/history.pid")" 2>/dev/null; then
    say "history exited during start-up; its log:"
    grep -E '"level":"(fatal|error)"' "$state/logs/history.log" | tail -n 3 | cut -c1-600 >&2
    exit 1
  fi
  [ "$(date +%s)" -gt "$deadline" ] && { say "history wrote no cluster metadata within 60 s"; exit 1; }
  sleep 0.5
done
for service in matching frontend worker; do bash "$here/service.sh" start "$state" "$service"; done
address="$host:${ports[1]}"
exit_if_a_service_died() {
  local service
  for service in history matching frontend worker; do
    kill -0 "$(cat "$state/pids/$service.pid")" 2>/dev/null && continue
    say "$service exited during start-up; its log:"
    grep -E '"level":"(fatal|error)"' "$state/logs/$service.log" | tail -n 3 | cut -c1-600 >&2
    exit 1
  done
}
cli="${TEMPORAL_CLI_PATH:-$root/.venv/bin/temporal}"
[ -x "$cli" ] || cli=temporal
deadline=$(($(date +%s) + 120))
until "$cli" operator cluster health --address "$address" >/dev/null 2>&1; do
  exit_if_a_service_died
  if [ "$(date +%s)" -gt "$deadline" ]; then
    say "frontend did not answer at $address within 120 s; logs:"
    tail -n 5 "$state"/logs/*.log | cut -c1-600 >&2
    exit 1
  fi
  sleep 1
done
exit_if_a_service_died
say "frontend answers at $address ($(($(date +%s) - t0)) s)"

"$cli" operator namespace create --address "$address" --namespace default --retention 24h >/dev/null
# The namespace cache of the other services picks a new namespace up within seconds.
deadline=$(($(date +%s) + 60))
until "$cli" operator namespace describe --address "$address" --namespace default >/dev/null 2>&1; do
  [ "$(date +%s)" -gt "$deadline" ] && { say "namespace default not visible"; exit 1; }
  sleep 1
done
# Name=Type pairs, as the dev servers of the other suites get them; the CLI takes one type per call.
mapfile -t attributes < <(node --import tsx "$here/search-attributes.ts")
[ "${#attributes[@]}" -gt 0 ] || { say "no search attributes found"; exit 1; }
for attribute in "${attributes[@]}"; do
  "$cli" operator search-attribute create --address "$address" --namespace default \
    --name "${attribute%%=*}" --type "${attribute##*=}" >/dev/null
done
say "namespace default with Attune's search attributes ($(($(date +%s) - t0)) s)"

# Schedules are answered by the worker service's per-namespace workers, which start only after that
# service sees the new namespace: until then DescribeSchedule times out. A paused probe schedule that
# describes back means the cluster serves schedules too.
probe="attune-cluster-probe-$$"
"$cli" schedule create --address "$address" --namespace default --schedule-id "$probe" --interval 24h \
  --paused --workflow-id "$probe" --task-queue "$probe" --type ClusterProbe >/dev/null
deadline=$(($(date +%s) + 180))
until "$cli" schedule describe --address "$address" --namespace default --schedule-id "$probe" \
  --command-timeout 10s >/dev/null 2>"$state/schedule-probe.err"; do
  if [ "$(date +%s)" -gt "$deadline" ]; then
    say "schedules are not served within 180 s: $(tail -n 1 "$state/schedule-probe.err"); worker service log:"
    grep -E '"level":"(error|warn)"' "$state/logs/worker.log" | tail -n 5 | cut -c1-600 >&2
    exit 1
  fi
  sleep 2
done
"$cli" schedule delete --address "$address" --namespace default --schedule-id "$probe" >/dev/null
say "schedules served ($(($(date +%s) - t0)) s)"

cat >"$state/env" <<ENV
ATTUNE_TEST_TEMPORAL_ADDRESS=$address
ATTUNE_TEST_TEMPORAL_CLUSTER=$state
ENV
echo "$state/env"
