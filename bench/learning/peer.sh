#!/usr/bin/env bash
# npm run bench:learning:peer [-- args for peer_grpo.py]: creates .venv-peer with the pins of
# bench/learning/peer-requirements.txt once (a changed pin reinstalls), then runs the peer benchmark.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
VENV="$ROOT/.venv-peer"
PY="$VENV/bin/python"
REQ="bench/learning/peer-requirements.txt"
# Written after a complete install, holding the requirements it installed.
STAMP="$VENV/.attune-requirements"

if [ -f "$STAMP" ] && cmp -s "$STAMP" "$REQ"; then
  echo "bench:learning:peer: .venv-peer is up to date with $REQ"
else
  if [ ! -x "$PY" ]; then
    BASE_PY="$(command -v python3.11 || command -v python3)"
    echo "bench:learning:peer: creating .venv-peer with $BASE_PY"
    "$BASE_PY" -m venv "$VENV"
  fi
  echo "bench:learning:peer: installing into .venv-peer: $(grep -v '^#' "$REQ" | grep -v '^$' | tr '\n' ' ')"
  echo "  $PY -m pip install --disable-pip-version-check -q -r $REQ"
  "$PY" -m pip install --disable-pip-version-check -q -r "$REQ"
  cp "$REQ" "$STAMP"
fi

exec "$PY" bench/learning/peer_grpo.py "$@"
