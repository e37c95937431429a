# shellcheck shell=bash
# A disk of known bandwidth for the rounds scripts (replay_rounds.sh, multinode_rounds.sh): a
# cgroup-v1 blkio throttle at THROTTLE bytes/s each way (300m, 1g …; "none": no throttle) on the
# disk under DIR, for the processes run through `throttled` only. Sourced; the caller removes the
# cgroup at exit with `throttle_remove`.
#
#   . tools/bench/_throttle.sh
#   throttle_make "$THROTTLE" "$FILE_DIR" tierbench-replay-$$ replay_rounds
#   throttled deno task tierbench bench …
#   throttle_remove

THROTTLE_CG=

# 300m → 314572800
throttle_bytes() {
  local n=${1%[kKmMgG]} u=${1: -1}
  case $u in k | K) echo $((n << 10)) ;; m | M) echo $((n << 20)) ;; g | G) echo $((n << 30)) ;; *) echo "$1" ;; esac
}

# throttle_make RATE DIR NAME WHO: makes the cgroup NAME capping DIR's disk at RATE each way;
# nothing for RATE "none"; exits 2 naming WHO when cgroup-v1 blkio is missing.
throttle_make() {
  local rate=$1 dir=$2 name=$3 who=$4 src disk dev
  [ "$rate" = none ] && return 0
  [ -d /sys/fs/cgroup/blkio ] || {
    echo "$who: THROTTLE needs cgroup-v1 blkio at /sys/fs/cgroup/blkio (or THROTTLE=none)" >&2
    exit 2
  }
  src=$(findmnt -no SOURCE -T "$dir")
  disk=$(lsblk -no PKNAME "$src" 2>/dev/null | head -1)
  dev=$(lsblk -ndo MAJ:MIN "/dev/${disk:-${src#/dev/}}" | tr -d ' ')
  THROTTLE_CG=/sys/fs/cgroup/blkio/$name
  mkdir "$THROTTLE_CG"
  echo "$dev $(throttle_bytes "$rate")" >"$THROTTLE_CG/blkio.throttle.read_bps_device"
  echo "$dev $(throttle_bytes "$rate")" >"$THROTTLE_CG/blkio.throttle.write_bps_device"
  echo "file tier capped at $rate/s each way on $dev ($THROTTLE_CG)"
}

# runs a command inside the throttle (when there is one); its children inherit it
throttled() {
  if [ -n "$THROTTLE_CG" ]; then
    bash -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$THROTTLE_CG" "$@"
  else
    "$@"
  fi
}

throttle_remove() {
  if [ -n "$THROTTLE_CG" ] && [ -d "$THROTTLE_CG" ]; then rmdir "$THROTTLE_CG"; fi
  return 0
}
