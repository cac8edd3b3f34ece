#!/usr/bin/env bash
# On a lent GPU machine (no network): install the carried wheels (.whl/, from `npm run bench:gpu:wheels`)
# beside the image's torch/transformers/peft/accelerate, then run the benchmark. Arguments go to main.py
# (e.g. --only qwen). Results: bench/results/gpu.json, and $OUT/gpu.json when OUT is set.
# The 7B full-weight case (last; alone: --only qwen2.5-7b-full, at most 9 minutes) keeps two ~91 GB snapshots:
# BENCH_GPU_STATE_DIR=/a/big/disk puts the run states there, else a smaller disk refuses the run (its row says so).
set -euo pipefail
cd "$(dirname "$0")/../.."
SITE=${ATTUNE_BENCH_SITE:-/tmp/attune-bench-site}
if [ -d .whl ] && compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target "$SITE" .whl/*.whl
fi
export PYTHONPATH="$SITE:$PWD/trainer/src"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
python3 -c 'import torch, transformers, peft, accelerate, pydantic; print("torch", torch.__version__, "transformers", transformers.__version__, "peft", peft.__version__, "accelerate", accelerate.__version__, "pydantic", pydantic.__version__)'
exec python3 bench/gpu/main.py --workdir "${ATTUNE_BENCH_WORKDIR:-/tmp/attune-gpu-bench}" "$@"
