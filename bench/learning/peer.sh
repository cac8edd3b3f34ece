#!/usr/bin/env bash
# npm run bench:learning:peer [-- args for peer_grpo.py]: runs the peer benchmark in .venv-peer, a venv
# layered on the trainer's .venv (a .pth file puts .venv's packages on its path): the peer uses the
# trainer's own torch and transformers, and .venv-peer adds only what the trainer lacks (TRL, datasets).
# The pins are bench/learning/peer-requirements.txt; a changed pin reinstalls.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
[ -x .venv/bin/python ] || bash trainer/install.sh
VENV="$ROOT/.venv-peer"
PY="$VENV/bin/python"
REQ="bench/learning/peer-requirements.txt"
# Written after a complete install, holding the requirements it installed.
STAMP="$VENV/.attune-requirements"
TRAINER_SITE="$(.venv/bin/python -c 'import site; print(site.getsitepackages()[0])')"

if [ ! -x "$PY" ]; then
  BASE_PY="$(command -v python3.11 || command -v python3)"
  echo "bench:learning:peer: creating .venv-peer with $BASE_PY"
  "$BASE_PY" -m venv "$VENV"
fi
PEER_SITE="$("$PY" -c 'import site; print(site.getsitepackages()[0])')"
echo "$TRAINER_SITE" > "$PEER_SITE/attune-trainer-venv.pth"

if [ -f "$STAMP" ] && cmp -s "$STAMP" "$REQ"; then
  echo "bench:learning:peer: .venv-peer is up to date with $REQ"
else
  # Pins the trainer already satisfies (torch, transformers, …) are found on .venv's path and not fetched.
  echo "bench:learning:peer: installing into .venv-peer: $(grep -v '^#' "$REQ" | grep -v '^$' | tr '\n' ' ')"
  "$PY" -m pip install --disable-pip-version-check -q -r "$REQ"
  cp "$REQ" "$STAMP"
fi

exec "$PY" bench/learning/peer_grpo.py "$@"
