# Sourced by scripts/test-stack.sh and scripts/stack/*.sh: where the stack test's Docker engine keeps
# its state, how to reach it, and the names and pinned versions of the images it builds.
# The engine's own socket, pid file and exec root (under /run, short: containerd's socket paths are
# bounded) and its data root in the cache, so images survive between runs on one machine.
ATTUNE_CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/attune"
STACK_RUN="${ATTUNE_STACK_RUN:-/run/attune-stack}"
STACK_DATA_ROOT="$ATTUNE_CACHE/docker"
export DOCKER_HOST="unix://$STACK_RUN/docker.sock"
# Debian's client (docker.io), whatever else PATH holds: its `docker build` is the classic builder,
# which needs no buildx plugin.
DOCKER=/usr/bin/docker
export DOCKER_BUILDKIT=0

# The image runs the Node.js LTS the tests run on (one declaration: scripts/node-lts.sh), with npm 11.
. "$(dirname "${BASH_SOURCE[0]}")/../node-lts.sh"
STACK_NODE_VERSION=$NODE_LTS_VERSION
STACK_NPM_VERSION=11.21.2
DEBIAN_IMAGE=attune-stack/debian:bookworm
NODE_BASE_IMAGE="attune-stack/node:$STACK_NODE_VERSION-bookworm"
ATTUNE_STACK_IMAGE=attune:stack
TRAINER_STACK_IMAGE=attune-trainer-cpu:stack
export DEBIAN_IMAGE NODE_BASE_IMAGE ATTUNE_STACK_IMAGE TRAINER_STACK_IMAGE
stack_say() { printf '[stack] %s\n' "$*" >&2; }
