#!/usr/bin/env bash
# One Temporal service process of the cluster in $2: `start`, `kill` (SIGKILL, a crash), `restart`
# (SIGKILL, then start again with the same config) or `stop` (SIGTERM). Usage: service.sh ACTION STATE SERVICE
set -euo pipefail
action="$1"
state="$2"
service="$3"
case "$service" in frontend | history | matching | worker) ;; *) echo "unknown service: $service" >&2; exit 2 ;; esac
pidfile="$state/pids/$service.pid"
mkdir -p "$state/pids" "$state/logs"

alive() { [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }

start() {
  if alive; then echo "$service already running" >&2; exit 1; fi
  # setsid: the service outlives the shell that started it, and a test's process group.
  setsid "$(cat "$state/server_bin")/server" --allow-no-auth --config-file "$state/config/cluster.yaml" \
    start --service "$service" >>"$state/logs/$service.log" 2>&1 </dev/null &
  echo $! >"$pidfile"
}

signal() {
  alive || return 0
  local pid
  pid=$(cat "$pidfile")
  kill "-$1" "$pid"
  for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid"; sleep 0.2; fi
  rm -f "$pidfile"
}

case "$action" in
  start) start ;;
  kill) signal KILL ;;
  restart) signal KILL; start ;;
  stop) signal TERM ;;
  *) echo "unknown action: $action (start, kill, restart, stop)" >&2; exit 2 ;;
esac
