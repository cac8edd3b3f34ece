#!/usr/bin/env bash
# Installs the Debian packages the stack test needs, only those missing: the Docker engine and its
# client (docker.io), debootstrap for the base image, Debian's docker-compose (1.29). `apt-get
# update` runs once, and only when something is missing.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=scripts/stack/env.sh
. "$here/env.sh"
# shellcheck source=scripts/apt.sh
. "$here/../apt.sh"
missing=()
[ -x /usr/sbin/dockerd ] && [ -x "$DOCKER" ] || missing+=(docker.io)
command -v debootstrap >/dev/null || [ -x /usr/sbin/debootstrap ] || missing+=(debootstrap)
command -v docker-compose >/dev/null || missing+=(docker-compose)
[ "${#missing[@]}" -eq 0 ] && exit 0
stack_say "installing ${missing[*]} from Debian's packages"
export DEBIAN_FRONTEND=noninteractive
# docker.io's maintainer scripts would start the system engine, with its default bridge network;
# policy-rc.d (Debian's switch for that) keeps them from starting any service.
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
  chmod +x /usr/sbin/policy-rc.d
  trap 'rm -f /usr/sbin/policy-rc.d' EXIT
fi
apt_get update >&2
apt_get install -y --no-install-recommends "${missing[@]}" >&2
