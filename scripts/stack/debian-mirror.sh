#!/usr/bin/env bash
# Prints the Debian mirror this machine's apt uses for SUITE ($1, default bookworm), from
# /etc/apt/sources.list and sources.list.d (one-line and deb822 formats). Exits 1 when none names it.
set -euo pipefail
suite="${1:-bookworm}"
shopt -s nullglob
lists=()
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do [ -f "$f" ] && lists+=("$f"); done
sources=(/etc/apt/sources.list.d/*.sources)
mirror=""
if [ "${#lists[@]}" -gt 0 ]; then
  mirror=$(sed -E 's/\[[^]]*\]//' "${lists[@]}" 2>/dev/null |
    awk -v s="$suite" '$1 == "deb" && $3 == s { print $2; exit }')
fi
if [ -z "$mirror" ] && [ "${#sources[@]}" -gt 0 ]; then
  # deb822: one paragraph per source; take the first URI of the first paragraph listing the suite.
  mirror=$(cat "${sources[@]}" | awk -v s="$suite" '
    BEGIN { RS = ""; FS = "\n" }
    {
      uri = ""; hit = 0
      for (i = 1; i <= NF; i++) {
        if ($i ~ /^URIs:/) { split($i, u, /[ \t]+/); uri = u[2] }
        if ($i ~ /^Suites:/) { n = split($i, w, /[ \t]+/); for (j = 2; j <= n; j++) if (w[j] == s) hit = 1 }
      }
      if (hit && uri != "") { print uri; exit }
    }')
fi
[ -n "$mirror" ] || exit 1
echo "${mirror%/}"
