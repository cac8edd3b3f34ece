#!/usr/bin/env bash
# Starts a local vLLM (CPU build, scripts/vllm/setup.sh) serving SmolLM2-135M-Instruct with
# runtime LoRA loading, for `training.publish.mode: vllm` (configs/vllm-local.yaml). Runs in the
# foreground until stopped (Ctrl-C / SIGTERM) and prints a line when it answers:
#   bash scripts/vllm/start.sh [--port 8000] [--state-dir .attune/trainer] [--full-weights] [-- extra vLLM options]
# --full-weights: for full fine-tuning (configs/vllm-local-full.yaml) instead of LoRA: dev mode
# (VLLM_SERVER_DEV_MODE=1), whose RL routes reload the weights in place after each step. Dev mode's
# /collective_rpc runs any worker method: it listens on 127.0.0.1 only (see SECURITY.md).
# The model is the trainer's own fp32 conversion of the SmolLM2 GGUF (<state-dir>/models/
# smollm2-135m, made here when missing), so vLLM and the trainer tokenise and score alike.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)

port=8000
state_dir=.attune/trainer
max_lora_rank=16
max_loras=4
max_model_len=2048
name=smollm2-135m-instruct
full_weights=0
while [ $# -gt 0 ]; do
  case $1 in
    --port) port=$2; shift 2 ;;
    --state-dir) state_dir=$2; shift 2 ;;
    --max-lora-rank) max_lora_rank=$2; shift 2 ;;
    --max-loras) max_loras=$2; shift 2 ;;
    --max-model-len) max_model_len=$2; shift 2 ;;
    --served-model-name) name=$2; shift 2 ;;
    --full-weights) full_weights=1; shift ;;
    --) shift; break ;;
    *) echo "start.sh: unknown option $1 (extra vLLM options go after --)" >&2; exit 2 ;;
  esac
done
say() { printf '[vllm] %s\n' "$*" >&2; }

bash "$repo/scripts/vllm/setup.sh"
mkdir -p "$state_dir"
model=$(PYTHONPATH="$repo/trainer/src" "$repo/.venv/bin/python" -c '
import sys
from pathlib import Path
from attune_trainer.models import resolve_base
print(resolve_base("smollm2-135m", Path(sys.argv[1]).resolve()))
' "$state_dir" | tail -1)

# CPU settings: a 1 GiB KV cache is plenty for short dialogues; one OpenMP thread per process
# keeps it from fighting the trainer for cores. Runtime LoRA loading is off unless asked for.
export VLLM_CPU_KVCACHE_SPACE=${VLLM_CPU_KVCACHE_SPACE:-1}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
export VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 HF_HUB_OFFLINE=1
if [ "$full_weights" = 1 ]; then
  export VLLM_SERVER_DEV_MODE=1
  # vLLM's CPU worker, whose in-place reloads also refresh a tied output head (reload_worker.py)
  export PYTHONPATH="$repo/scripts/vllm${PYTHONPATH:+:$PYTHONPATH}"
  # Eager (compilation mode 0): this vLLM-CPU build cannot load its own AOT compile cache ("'function'
  # object has no attribute 'finalize_loading'"), so every start traced the model again: 90 s on an
  # idle 2-core machine, past 15 minutes on a busy one. Eager starts in about 30 s; a 135M model on
  # CPU gains little from compiling.
  mode=(--worker-cls reload_worker.ReloadingCPUWorker --compilation-config '{"mode":0}')
  what="full-weight reloads (dev mode)"
else
  export VLLM_ALLOW_RUNTIME_LORA_UPDATING=True
  mode=(--enable-lora --max-lora-rank "$max_lora_rank" --max-loras "$max_loras"); what="LoRA rank <= $max_lora_rank"
fi

say "starting vLLM on 127.0.0.1:$port serving $model as $name ($what)"
"$repo/.venv-vllm/bin/python" -m vllm.entrypoints.openai.api_server \
  --model "$model" --served-model-name "$name" --dtype float32 \
  --host 127.0.0.1 --port "$port" --max-model-len "$max_model_len" "${mode[@]}" "$@" &
server=$!
trap 'kill -TERM $server 2>/dev/null; wait $server 2>/dev/null' INT TERM
trap 'kill -TERM $server 2>/dev/null' EXIT
until curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1; do
  if ! kill -0 "$server" 2>/dev/null; then wait "$server"; exit $?; fi
  sleep 1
done
echo "vLLM ready: http://127.0.0.1:$port/v1 (model $name, $what)"
wait "$server"
