#!/usr/bin/env bash
# Whether the simulator's difficulty levels change the score: the embedded SmolLM2 policy scored by
# the embedded SmolLM2 simulator at simple, normal and hard, seeds 1-3, on the same four scenarios,
# then the table
# (bench/difficulty/summary.ts, which writes bench/results/difficulty-smollm2.json).
# Needs `npx attune dev` running beside it with the same settings (see docs/measured.md):
#   npx attune dev --set simulator.timeoutMs=600000 --set policy.timeoutMs=600000 --set evaluation.concurrency=2
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ "${1:-}" = "--help" ]; then sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0; fi
out=$(mktemp -d "${TMPDIR:-/tmp}/attune-difficulty-XXXXXX")
only=eval-critical-analysis-avoidant-bakery-till,eval-not-my-fault-avoidant-lent-car,eval-self-reflection-avoidant-wedding-toast,eval-understanding-others-avoidant-one-way-ticket
for seed in 1 2 3; do
  for level in simple normal hard; do
    echo "== $level, seed $seed" >&2
    npx attune eval --split eval --json --name "difficulty-$level-seed-$seed-$(date +%s)" --only "$only" \
      --set simulator.timeoutMs=600000 --set policy.timeoutMs=600000 --set evaluation.concurrency=2 \
      --set evaluation.dialogue.maxTurns=2 --set policy.maxTokens=48 --set "evaluation.seed=$seed" \
      --set "simulator.difficulty=$level" >"$out/$level-$seed.json"
  done
done
node --import tsx bench/difficulty/summary.ts "$out"/*.json
