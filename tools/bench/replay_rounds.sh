#!/usr/bin/env bash
# The solver's replay check (README "Placement plans"): ROUNDS rounds of
#   bench (memory, file, CephFS) → two plans (small and large host cache) → each replayed twice,
#   and the first once more with --activations (its activation plan and every layer offloaded),
# on a real single-node Ceph started here, then a table of predicted against measured.
#
# REPLAYS=3 replays each plan three times (the table gives each replay's error and their median).
# THROTTLE=300m caps the file tier's disk at that many bytes/s each way for the measured
# commands (a cgroup-v1 blkio throttle: O_DIRECT reads and writes of those processes only; the
# Ceph daemons stay outside), so that the disk behaves like a device of known bandwidth instead
# of a virtual disk whose speed follows the host's page cache. THROTTLE=none runs unthrottled.
# DEVICE=loop puts the file tier on an ext4 loop device over /dev/shm instead of the disk
# (tools/bench/_loop.sh): Ceph's own writes to the disk then no longer reach the file tier's
# device, and THROTTLE caps the loop device. LOOP_SIZE (default 8g, sparse) is its size.
#
# Needs root and the Ceph packages (see README); no other cluster may be up (Ceph's ports are
# fixed). Writes only under $OUT, $FILE_DIR (the file tier's scratch, removed by each command), its
# own Ceph state directory and its own cgroup, and removes the cgroup and the cluster at exit,
# Ctrl-C included.
#
#   ROUNDS=2 THROTTLE=300m OUT=results/replay-rounds deno task bench:replay
#   DEVICE=loop REPLAYS=3 THROTTLE=300m OUT=results/replay-loop deno task bench:replay
set -euo pipefail
cd "$(dirname "$0")/../.."
DENO=${DENO:-"npx -y deno@2.9.6"}
ROUNDS=${ROUNDS:-2}
THROTTLE=${THROTTLE:-300m}
OUT=${OUT:-results/replay-rounds}
FILE_DIR=${FILE_DIR:-/tmp/tierbench-replay-nvme}
MODEL=${MODEL:-7b}
CACHES=${CACHES:-"1g 8g"}
SCALE=${SCALE:-0.021}
ITERATIONS=${ITERATIONS:-5}
REPLAYS=${REPLAYS:-2}
CEPH_DIR=${CEPH_DIR:-/tmp/tierbench-ceph-replay}
DEVICE=${DEVICE:-disk}
LOOP_SIZE=${LOOP_SIZE:-8g}
case $DEVICE in disk | loop) ;; *)
  echo "replay_rounds: DEVICE=$DEVICE is neither disk nor loop" >&2
  exit 2
  ;;
esac

# shellcheck source=tools/bench/_loop.sh
. tools/bench/_loop.sh
# shellcheck source=tools/bench/_throttle.sh
. tools/bench/_throttle.sh
mkdir -p "$OUT" "$FILE_DIR"
ceph_started=
cleanup() {
  set +e
  throttle_remove
  loop_remove
  [ -n "$ceph_started" ] && $DENO task -q ceph:down --dir "$CEPH_DIR" >/dev/null 2>&1
  rmdir "$FILE_DIR" 2>/dev/null
}
trap cleanup EXIT
trap 'exit 130' INT TERM

[ "$DEVICE" = loop ] && loop_make "$LOOP_SIZE" "$FILE_DIR" replay_rounds
throttle_make "$THROTTLE" "$FILE_DIR" tierbench-replay-$$ replay_rounds

ceph_started=1
$DENO task -q ceph:up --dir "$CEPH_DIR" >"$OUT/ceph.env"
# shellcheck disable=SC1091
. "$OUT/ceph.env"
# the plans are over memory, file and CephFS: the bucket RGW serves stays out of the profile
unset TIERBENCH_S3_BUCKET TIERBENCH_S3_ENDPOINT
TIERS=memory:/dev/shm,file:$FILE_DIR,pfs:$TIERBENCH_PFS_DIR
for r in $(seq 1 "$ROUNDS"); do
  echo "round $r: bench $(date +%T)"
  throttled $DENO task -q tierbench bench --file-dir "$FILE_DIR" --pfs "$TIERBENCH_PFS_DIR" \
    --quiet --output "$OUT/profile-$r.json" >"$OUT/profile-$r.txt"
  for c in $CACHES; do
    plan=$OUT/plan-$r-$MODEL-$c.json
    $DENO task -q tierbench plan --profile "$OUT/profile-$r.json" --model "$MODEL" \
      --host-cache "$c" --output "$plan" >"${plan%.json}.txt"
    for i in $(seq 1 "$REPLAYS"); do
      echo "round $r: replay $MODEL with $c host cache ($i) $(date +%T)"
      throttled $DENO task -q tierbench replay "$plan" --tiers "$TIERS" --scale "$SCALE" \
        --iterations "$ITERATIONS" --quiet --output "$OUT/replay-$r-$MODEL-$c-$i.json" \
        >"$OUT/replay-$r-$MODEL-$c-$i.txt"
    done
  done
  # the activation plan and every layer offloaded (ssdtrain), forward and backward
  first=$OUT/plan-$r-$MODEL-${CACHES%% *}.json
  echo "round $r: activations $(date +%T)"
  throttled $DENO task -q tierbench replay "$first" --tiers "$TIERS" --scale "$SCALE" \
    --iterations 3 --activations --quiet --output "$OUT/activations-$r.json" >"$OUT/activations-$r.txt"
done
$DENO run --allow-read tools/bench/replay_table.ts "$OUT"/replay-*.json "$OUT"/activations-*.json
