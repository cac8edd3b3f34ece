#!/usr/bin/env bash
# Download, here (a machine that reaches PyPI), the wheels the trainer needs that a lent GPU machine's
# image lacks, into .whl/ (git-ignored; carried to the device with `carry: [".whl"]`). The versions are
# the ones the local .venv has, so the device runs what the tests run.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-python3}
version() { .venv/bin/python -c "import importlib.metadata as m; print(m.version('$1'))"; }
rm -rf .whl && mkdir -p .whl
for pkg in pydantic pydantic_core annotated-types typing-inspection PyYAML; do
  "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d .whl "$pkg==$(version "$pkg")"
done
ls -l .whl
total=$(du -cb .whl/*.whl | tail -1 | cut -f1)
echo "wheels: $total bytes (a device call carries at most 64 MiB with the repository)"
[ "$total" -lt $((32 * 1024 * 1024)) ] || { echo "the wheels are too large to carry" >&2; exit 1; }
