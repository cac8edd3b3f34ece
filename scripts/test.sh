#!/usr/bin/env bash
# The whole test suite: type check, lint, formatting (Prettier, ruff), mocha (real Temporal dev server, fake OpenAI server,
# real local model server), pytest (trainer on CPU), a real vLLM on CPU, the suites against a Temporal cluster on
# PostgreSQL, the multi-host suite in network namespaces, and the images and compose stack on Docker. Prints one
# summary line at the end.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit 1
mkdir -p test-output

status=0
echo "== typecheck"; npx tsc --noEmit -p . || status=1
echo "== lint"; npx eslint src test $( [ -n "$(ls bench/*/*.ts 2>/dev/null)" ] && echo bench) || status=1
echo "== format"; npx prettier --check . || status=1
echo "== ruff"; { .venv/bin/ruff check trainer && .venv/bin/ruff format --check trainer; } || status=1

# The mocha suites include the S3 artifact store's against a real MinIO server: their before hooks build
# it from the Go module proxy once (scripts/s3/build-server.sh, cached in ~/.cache/attune) and start it.
echo "== mocha"
npx mocha "test/**/*.test.ts" 2>&1 | tee test-output/mocha.log
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
mocha_passed=$(grep -Eo '^ +[0-9]+ passing' test-output/mocha.log | grep -Eo '[0-9]+' | tail -1)
mocha_failed=$(grep -Eo '^ +[0-9]+ failing' test-output/mocha.log | grep -Eo '[0-9]+' | tail -1)

py_passed=0; py_failed=0
if [ -d trainer/tests ]; then
  echo "== pytest"
  .venv/bin/python -m pytest trainer/tests -q -p no:cacheprovider 2>&1 | tee test-output/pytest.log
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  py_passed=$(grep -Eo '[0-9]+ passed' test-output/pytest.log | grep -Eo '[0-9]+' | tail -1)
  py_failed=$(grep -Eo '[0-9]+ failed' test-output/pytest.log | grep -Eo '[0-9]+' | tail -1)
fi

# The suite against a real vLLM (CPU build, SmolLM2-135M, runtime LoRA): it installs vLLM into its own
# virtualenv cached in ~/.cache/attune, starts it on a free port and stops it (scripts/test-vllm.sh).
echo "== test:vllm"
bash scripts/test-vllm.sh 2>&1 | tee test-output/vllm.log
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
vllm_passed=$(grep -Eo '^ +[0-9]+ passing' test-output/vllm.log | grep -Eo '[0-9]+' | tail -1)
vllm_failed=$(grep -Eo '^ +[0-9]+ failing' test-output/vllm.log | grep -Eo '[0-9]+' | tail -1)

# The suites against a real Temporal cluster on PostgreSQL: they set the cluster up themselves
# (Debian's PostgreSQL, the server built from the Go module proxy and cached in ~/.cache/attune).
echo "== test:postgres"
bash scripts/test-postgres.sh 2>&1 | tee test-output/postgres.log
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
pg_passed=$(grep -Eo '^ +[0-9]+ passing' test-output/postgres.log | grep -Eo '[0-9]+' | tail -1)
pg_failed=$(grep -Eo '^ +[0-9]+ failing' test-output/postgres.log | grep -Eo '[0-9]+' | tail -1)

# Attune's hosts as network namespaces (root only): a run across them through host and link faults
# (scripts/test-multihost.sh; the same Temporal cluster build, the same MinIO).
echo "== test:multihost"
bash scripts/test-multihost.sh 2>&1 | tee test-output/multihost.log
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
mh_passed=$(grep -Eo '^ +[0-9]+ passing' test-output/multihost.log | grep -Eo '[0-9]+' | tail -1)
mh_failed=$(grep -Eo '^ +[0-9]+ failing' test-output/multihost.log | grep -Eo '[0-9]+' | tail -1)

# Attune's images and compose stack on a Docker engine of the suite's own (scripts/test-stack.sh):
# it installs docker.io and debootstrap when missing and caches its images in ~/.cache/attune.
echo "== test:stack"
bash scripts/test-stack.sh 2>&1 | tee test-output/stack.log
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
stack_passed=$(grep -Eo '^ +[0-9]+ passing' test-output/stack.log | grep -Eo '[0-9]+' | tail -1)
stack_failed=$(grep -Eo '^ +[0-9]+ failing' test-output/stack.log | grep -Eo '[0-9]+' | tail -1)

passed=$(( ${mocha_passed:-0} + ${py_passed:-0} + ${vllm_passed:-0} + ${pg_passed:-0} + ${mh_passed:-0} + ${stack_passed:-0} ))
failed=$(( ${mocha_failed:-0} + ${py_failed:-0} + ${vllm_failed:-0} + ${pg_failed:-0} + ${mh_failed:-0} + ${stack_failed:-0} ))
if [ "$passed" -eq 0 ]; then echo "no tests ran"; status=1; fi
echo "tests: ${passed} passed, ${failed} failed"
exit $status
