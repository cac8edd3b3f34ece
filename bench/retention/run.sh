#!/usr/bin/env bash
# What a training run cost the policy elsewhere (capability retention): the maths and code suites on
# the run's weights before and after training, both served the same way (vLLM on CPU, fp32, greedy),
# then the table
# (bench/retention/summary.ts, which writes bench/results/retention-smollm2.json).
#   bash bench/retention/run.sh RUN STEP_BEFORE STEP_AFTER
# Needs `npx attune dev` running beside it (its workers play the suites), the run's trainer state in
# <home>/trainer with both steps' weights on disk (a snapshot or an export of each), and the vLLM
# environment that `npm test` installs (scripts/vllm/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ "${1:-}" = "--help" ] || [ $# -ne 3 ]; then sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; [ "${1:-}" = "--help" ]; exit $?; fi
run=$1
port=${RETENTION_VLLM_PORT:-8510}
work=$(mktemp -d "${TMPDIR:-/tmp}/attune-retention-XXXXXX")
server=
trap '[ -n "$server" ] && kill -TERM $server 2>/dev/null; wait 2>/dev/null; rm -rf "$work/weights-"*' EXIT
bash scripts/vllm/setup.sh
reports=()
for step in "$2" "$3"; do
  npx attune export "$run@$step" --out "$work/weights-$step" >&2
  VLLM_CPU_KVCACHE_SPACE=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 HF_HUB_OFFLINE=1 \
    .venv-vllm/bin/python -m vllm.entrypoints.openai.api_server --model "$work/weights-$step" \
    --served-model-name "$run@$step" --dtype float32 --host 127.0.0.1 --port "$port" \
    --max-model-len 2048 --compilation-config '{"mode":0}' >"$work/vllm-$step.log" 2>&1 &
  server=$!
  until curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1; do
    kill -0 "$server" 2>/dev/null || { tail -20 "$work/vllm-$step.log" >&2; exit 1; }
    sleep 2
  done
  for suite in math code; do
    echo "== $run@$step: $suite" >&2
    npx attune eval --suite "$suite" --json --name "retention-$run-$step-$suite-$(date +%s)" \
      --set "policy.baseURL=http://127.0.0.1:$port/v1" --set "policy.model=$run@$step" \
      --set policy.timeoutMs=600000 --set evaluation.concurrency=8 >"$work/$step-$suite.json"
    reports+=("$work/$step-$suite.json")
  done
  kill -TERM "$server"; wait "$server" 2>/dev/null || true; server=
done
node --import tsx bench/retention/summary.ts --before "$2" --after "$3" "${reports[@]}"
echo "the suites' reports: $work" >&2
