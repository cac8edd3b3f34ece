#!/usr/bin/env bash
# The stack test's own Docker engine: `engine.sh start` starts dockerd with its own socket, pid
# file, exec root and containerd namespace (nothing shared with a system engine), its data root
# under ~/.cache/attune/docker, and no networking of its own: no bridge, no iptables rules, so
# containers run with host networking only. `engine.sh stop` stops it and leaves the data root.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=scripts/stack/env.sh
. "$here/env.sh"
pidfile="$STACK_RUN/dockerd.pid"
log="$STACK_RUN/dockerd.log"

running() { [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }

case "${1:-}" in
  start)
    mkdir -p "$STACK_RUN" "$STACK_DATA_ROOT"
    if running; then
      stack_say "engine already running (pid $(cat "$pidfile"))"
    else
      # setsid: the engine outlives no shell by accident; `stop` ends it by its pid file.
      setsid dockerd \
        --host "$DOCKER_HOST" \
        --pidfile "$pidfile" \
        --data-root "$STACK_DATA_ROOT" \
        --exec-root "$STACK_RUN/exec" \
        --containerd-namespace attune-stack \
        --containerd-plugins-namespace attune-stack-plugins \
        --bridge=none \
        --iptables=false \
        --ip-forward=false \
        --ip-masq=false \
        --userland-proxy=false \
        >"$log" 2>&1 </dev/null &
    fi
    deadline=$(($(date +%s) + 60))
    until "$DOCKER" version >/dev/null 2>&1; do
      if [ "$(date +%s)" -gt "$deadline" ]; then
        stack_say "dockerd did not answer on $DOCKER_HOST within 60 s; its log:"
        tail -n 20 "$log" >&2
        exit 1
      fi
      sleep 1
    done
    stack_say "engine up on $DOCKER_HOST, data root $STACK_DATA_ROOT"
    ;;
  stop)
    running || exit 0
    pid=$(cat "$pidfile")
    kill -TERM "$pid"
    for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
    if kill -0 "$pid" 2>/dev/null; then
      stack_say "dockerd $pid still running after 60 s; killing it"
      kill -KILL "$pid"
    fi
    stack_say "engine stopped"
    ;;
  *)
    echo "usage: engine.sh start|stop" >&2
    exit 2
    ;;
esac
