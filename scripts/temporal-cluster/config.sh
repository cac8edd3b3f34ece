#!/usr/bin/env bash
# Writes the server's config file: both stores on postgres12 at 127.0.0.1:$2, and for each of the
# four services its gRPC and membership port from $3 (a file of `service grpc membership` lines),
# bound to $4 (default 127.0.0.1; the multi-host suite gives its `temporal` namespace's address).
set -euo pipefail
state="$1"
pg_port="$2"
ports_file="$3"
host="${4:-127.0.0.1}"
port_of() { awk -v s="$1" -v c="$2" '$1 == s { print $c }' "$ports_file"; }
mkdir -p "$state/config/dynamicconfig"
# One partition per task queue, as the dev server of the other suites: a small cluster gains nothing
# from spreading pollers over four.
cat >"$state/config/dynamicconfig/cluster.yaml" <<YAML
matching.numTaskqueueReadPartitions:
  - value: 1
matching.numTaskqueueWritePartitions:
  - value: 1
limit.maxIDLength:
  - value: 255
YAML
store() {
  cat <<YAML
      sql:
        pluginName: postgres12
        databaseName: $1
        connectAddr: "127.0.0.1:$pg_port"
        connectProtocol: tcp
        user: temporal
        password: temporal
        maxConns: $2
        maxIdleConns: $2
        maxConnLifetime: 1h
YAML
}
service() {
  cat <<YAML
  $1:
    rpc:
      grpcPort: $(port_of "$1" 2)
      membershipPort: $(port_of "$1" 3)
      bindOnIP: $host
YAML
}
{
  cat <<YAML
log:
  stdout: true
  level: warn
persistence:
  defaultStore: postgres-default
  visibilityStore: postgres-visibility
  numHistoryShards: 4
  datastores:
    postgres-default:
$(store temporal 20)
    postgres-visibility:
$(store temporal_visibility 5)
global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: $host
services:
$(service frontend)
$(service history)
$(service matching)
$(service worker)
clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: active
  currentClusterName: active
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: frontend
      rpcAddress: "$host:$(port_of frontend 2)"
dcRedirectionPolicy:
  policy: noop
dynamicConfigClient:
  filepath: "$state/config/dynamicconfig/cluster.yaml"
  pollInterval: 10s
YAML
} >"$state/config/cluster.yaml"
