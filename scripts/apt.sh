# apt_get: apt-get that waits while another apt-get or dpkg holds one of apt's locks, for at most
# ATTUNE_APT_LOCK_TIMEOUT seconds (default 600), then fails with a message saying so. Two set-ups
# started side by side (`npm test` and `npm run demo`) otherwise fail at once on the lock.
# Source it: . scripts/apt.sh
ATTUNE_APT_LOCK_TIMEOUT=${ATTUNE_APT_LOCK_TIMEOUT:-600}

# Wall-clock microseconds (bash 5's EPOCHREALTIME, whatever the locale's decimal separator).
apt_now_us() {
  if [ -n "${EPOCHREALTIME:-}" ]; then
    echo "${EPOCHREALTIME//[!0-9]/}"
  else
    echo "$(($(date +%s) * 1000000))"
  fi
}

apt_get() {
  local -
  set -o pipefail
  if ! [[ "$ATTUNE_APT_LOCK_TIMEOUT" =~ ^[0-9]+$ ]]; then
    echo "[apt] ATTUNE_APT_LOCK_TIMEOUT must be a whole number of seconds, not '$ATTUNE_APT_LOCK_TIMEOUT'" >&2
    return 2
  fi
  # The deadline in microseconds of wall time: bash's SECONDS counts whole seconds, and a deadline
  # kept in it could pass up to a second early.
  local deadline err status left said=""
  deadline=$(($(apt_now_us) + ATTUNE_APT_LOCK_TIMEOUT * 1000000))
  err=$(mktemp)
  while :; do
    left=$(((deadline - $(apt_now_us) + 999999) / 1000000))
    [ "$left" -lt 0 ] && left=0
    # apt-get itself waits for dpkg's lock (DPkg::Lock::Timeout); the lists lock of `apt-get update`
    # and the archives lock fail at once, so this loop tries again while time is left.
    { DEBIAN_FRONTEND=noninteractive apt-get -o "DPkg::Lock::Timeout=$left" "$@" 2>&1 1>&3 3>&- | tee "$err" >&2; } 3>&1 &&
      status=0 || status=$?
    if [ "$status" -eq 0 ] || ! grep -qE 'Could not get lock|Unable to acquire the dpkg frontend lock|Unable to lock' "$err"; then
      rm -f "$err"
      return "$status"
    fi
    if [ "$(apt_now_us)" -ge "$deadline" ]; then
      rm -f "$err"
      echo "[apt] gave up after ${ATTUNE_APT_LOCK_TIMEOUT} s: another apt-get or dpkg held apt's lock all that time." \
        "Run this again when it has finished, or wait longer with ATTUNE_APT_LOCK_TIMEOUT=<seconds>." >&2
      return "$status"
    fi
    if [ -z "$said" ]; then
      echo "[apt] another apt-get or dpkg holds apt's lock: waiting for it (at most ${ATTUNE_APT_LOCK_TIMEOUT} s)" >&2
      said=1
    fi
    sleep 2
  done
}
