#!/usr/bin/env bash
# The embedded default: bootstrap a fresh clone, then train, evaluate and report on local models.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# On the Node.js LTS that set-up installed, as the tests run.
# shellcheck source=scripts/node-lts.sh
. scripts/node-lts.sh
exec "$NODE_LTS_BIN/node" bin/attune.js demo "$@"
