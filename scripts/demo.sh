#!/usr/bin/env bash
# The embedded default: bootstrap a fresh clone, then train, evaluate and report on local models.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec node bin/attune.js demo "$@"
