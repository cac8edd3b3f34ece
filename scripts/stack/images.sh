#!/usr/bin/env bash
# Builds Attune's image (Dockerfile) and the trainer's CPU image (trainer/Dockerfile) from the
# stack test's local base images (base-images.sh), with host networking (the engine has no bridge).
# The layer cache in the engine's data root makes a rebuild after a source change cheap. Prints
# each build step as progress, and a line a minute while one step runs long; the whole output of a
# failed build goes to stderr.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
# shellcheck source=scripts/stack/env.sh
. "$here/env.sh"
logs="$STACK_RUN/build-logs"
mkdir -p "$logs"

build() {
  local image="$1" log="$logs/${1//[:\/]/-}.log"
  shift
  local t0 ticker status
  t0=$(date +%s)
  stack_say "building $image"
  (while sleep 60; do stack_say "  $image: still building ($(($(date +%s) - t0)) s)"; done) &
  ticker=$!
  set +e
  "$DOCKER" build --network host --force-rm -t "$image" "$@" "$root" 2>&1 |
    tee "$log" | sed -u -n -E 's/^(Step [0-9]+\/[0-9]+ : .{0,90}).*/[stack]   \1/p' >&2
  status=${PIPESTATUS[0]}
  set -e
  kill "$ticker" 2>/dev/null || true
  wait "$ticker" 2>/dev/null || true
  if [ "$status" -ne 0 ]; then
    stack_say "building $image failed; its output:"
    tail -n 60 "$log" >&2
    return 1
  fi
  stack_say "$image built ($(($(date +%s) - t0)) s)"
}

# The deps stage gets a tag of its own, so that pruning superseded images below keeps it as cache
# (an untagged stage's image counts as dangling).
build "$ATTUNE_STACK_IMAGE-deps" -f "$root/Dockerfile" --build-arg "NODE_IMAGE=$NODE_BASE_IMAGE" --target deps
build "$ATTUNE_STACK_IMAGE" -f "$root/Dockerfile" --build-arg "NODE_IMAGE=$NODE_BASE_IMAGE"
# The debootstrap base has no Python: trainer/Dockerfile installs Debian's (3.11) itself.
build "$TRAINER_STACK_IMAGE" -f "$root/trainer/Dockerfile" --build-arg "TRAINER_BASE_IMAGE=$DEBIAN_IMAGE"
# Superseded images of earlier builds; the layers the tagged images use stay as the build cache.
"$DOCKER" image prune -f >/dev/null
