#!/usr/bin/env bash
# The concurrency curves of README "Concurrency curves": memory (/dev/shm), file (a directory on
# this disk, O_DIRECT) and CephFS (a real single-node Ceph started here, O_DIRECT through
# ceph-fuse) at 1 … 4 processes, 1 MiB and 2 MiB × 8 in flight each, read, write and both — the
# `contention` command (its matrix first, then the curves) — once with the disk as it is and once
# with the file tier's disk capped at THROTTLE bytes/s each way (tools/bench/_throttle.sh, as the
# replay rounds do: a device that holds still), then a table of each.
#
# Needs root and the Ceph packages (see README); no other cluster may be up (Ceph's ports are
# fixed). Writes only under $OUT, $FILE_DIR (the file tier's scratch, removed by each command), its
# own Ceph state directory and its own cgroup, and removes the cgroup and the cluster at exit.
#
#   THROTTLE=300m OUT=results/concurrency deno task bench:concurrency
set -euo pipefail
cd "$(dirname "$0")/../.."
DENO=${DENO:-"npx -y deno@2.9.6"}
THROTTLE=${THROTTLE:-300m}
OUT=${OUT:-results/concurrency}
FILE_DIR=${FILE_DIR:-/var/tmp/tierbench-concurrency}
CEPH_DIR=${CEPH_DIR:-/tmp/tierbench-ceph-concurrency}

mkdir -p "$OUT" "$FILE_DIR"
ceph_started=
cleanup() {
  set +e
  throttle_remove
  [ -n "$ceph_started" ] && $DENO task -q ceph:down --dir "$CEPH_DIR" >/dev/null 2>&1
  rmdir "$FILE_DIR" 2>/dev/null
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# shellcheck source=tools/bench/_throttle.sh
. tools/bench/_throttle.sh

ceph_started=1
$DENO task -q ceph:up --dir "$CEPH_DIR" >"$OUT/ceph.env"
# shellcheck disable=SC1091
. "$OUT/ceph.env"
TIERS=memory:/dev/shm,file:$FILE_DIR,pfs:$TIERBENCH_PFS_DIR

echo "unthrottled $(date +%T)"
$DENO task -q tierbench contention --tiers "$TIERS" --ranks-per-node 4 --concurrency-bs 1m,2m \
  --quiet --output "$OUT/curves.json" >"$OUT/curves.txt"
if [ "$THROTTLE" != none ]; then
  throttle_make "$THROTTLE" "$FILE_DIR" tierbench-concurrency-$$ concurrency_curves
  echo "file tier throttled to $THROTTLE/s $(date +%T)"
  throttled $DENO task -q tierbench contention --tiers "$TIERS" --ranks-per-node 4 \
    --concurrency-bs 1m,2m --quiet --output "$OUT/curves-throttled.json" \
    >"$OUT/curves-throttled.txt"
fi
tables=("$OUT/curves.json")
[ "$THROTTLE" != none ] && tables+=("$OUT/curves-throttled.json")
$DENO run --allow-read tools/bench/concurrency_table.ts "${tables[@]}"
