#!/usr/bin/env bash
# Installs Debian's Chromium for `attune report` PNGs and the report browser test; idempotent.
# Set CHROMIUM_PATH to use a browser elsewhere. Exits 0 when no browser could be installed
# (HTML reports still work; only the PNG charts need Chromium), 1 only when apt-get itself fails.
set -euo pipefail

say() { printf '[chromium] %s\n' "$*" >&2; }
# shellcheck source=scripts/apt.sh
. "$(dirname "$0")/apt.sh"

CHROMIUM=${CHROMIUM_PATH:-/usr/bin/chromium}
if [ -x "$CHROMIUM" ]; then
  say "found $CHROMIUM ($("$CHROMIUM" --version 2>/dev/null || echo 'version unknown'))"
  exit 0
fi

if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  say "installing chromium with apt-get"
  apt_get update -qq
  apt_get install -y -qq --no-install-recommends chromium
  if [ -x /usr/bin/chromium ]; then
    say "installed /usr/bin/chromium ($(/usr/bin/chromium --version 2>/dev/null || echo 'version unknown'))"
    exit 0
  fi
  say "apt-get finished but /usr/bin/chromium is missing"
  exit 1
fi

say "chromium not found at $CHROMIUM; attune report writes HTML without it, but its PNG charts need it."
if command -v apt-get >/dev/null 2>&1; then
  say "install it with: sudo apt-get install --no-install-recommends chromium"
else
  say "install Chromium with your package manager (Debian/Ubuntu: apt-get install chromium) and set CHROMIUM_PATH if it is not /usr/bin/chromium"
fi
exit 0
