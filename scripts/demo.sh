#!/usr/bin/env bash
# The embedded default: bootstrap, then one dialogue on local models through a real Temporal dev server.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec node bin/attune.js rollout --scenario "${ATTUNE_DEMO_SCENARIO:-eval-critical-analysis-avoidant-bakery-till}" --max-turns "${ATTUNE_DEMO_TURNS:-3}" --set policy.maxTokens=160 "$@"
