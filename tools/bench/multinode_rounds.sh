#!/usr/bin/env bash
# The multi-node figures of docs/multinode.md, on this machine: 3 processes, each a node of its own
# (TIERBENCH_NODE_PER_RANK=1), against a real single-node Ceph (CephFS and RGW) started here:
#   1. `run` under mpirun -np 3 (Open MPI) and srun -n 3 (a single-node Slurm started here), writing
#      then reading 1 MiB × 8 on CephFS and on RGW: one document each, the aggregate and each process;
#   2. `bench` under mpirun -np 3 over memory, file, CephFS and RGW: the root's profile and the
#      scaling curve of CephFS and RGW at 1, 2 and 3 nodes;
#   3. `plan --nodes 1,3` on that profile: how the placement shifts.
# Then a Markdown summary of all three. Coordination cost: `deno task bench:coord`.
#
# THROTTLE=300m caps the file tier's disk at that many bytes/s each way during `bench` (a cgroup-v1
# blkio throttle on its processes, as tools/bench/replay_rounds.sh does; the Ceph daemons stay
# outside), so the node-local tier behaves like a device of known bandwidth and the plan has a reason to use
# the shared tier; THROTTLE=none (the default) leaves the disk as it is.
#
# Needs root, Ceph, Open MPI and Slurm (the test command installs them); no other Ceph or Slurm may
# be up (their ports are fixed). Writes only under $OUT, $FILE_DIR and its own Ceph and Slurm state
# directories, and removes the clusters at exit, Ctrl-C included.
#
#   OUT=results/multinode RUNTIME=5 THROTTLE=300m deno task bench:multinode
set -euo pipefail
cd "$(dirname "$0")/../.."
DENO=${DENO:-"npx -y deno@2.9.6"}
OUT=${OUT:-results/multinode}
RUNTIME=${RUNTIME:-5}
MODEL=${MODEL:-7b}
FILE_DIR=${FILE_DIR:-/tmp/tierbench-multinode-nvme}
CEPH_DIR=${CEPH_DIR:-/tmp/tierbench-ceph-multinode}
SLURM_DIR=${SLURM_DIR:-/tmp/tierbench-slurm-multinode}
THROTTLE=${THROTTLE:-none}

mkdir -p "$OUT" "$FILE_DIR"
ceph_started= slurm_started=
cleanup() {
  set +e
  throttle_remove
  [ -n "$slurm_started" ] && $DENO task -q slurm:down --dir "$SLURM_DIR" >/dev/null 2>&1
  [ -n "$ceph_started" ] && $DENO task -q ceph:down --dir "$CEPH_DIR" >/dev/null 2>&1
  rmdir "$FILE_DIR" 2>/dev/null
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# shellcheck source=tools/bench/_throttle.sh
. tools/bench/_throttle.sh
throttle_make "$THROTTLE" "$FILE_DIR" tierbench-multinode-$$ multinode_rounds

DENO_BIN=$($DENO eval 'console.log(Deno.execPath())')
TB=("$DENO_BIN" run -q --allow-all "$PWD/main.ts")
export TIERBENCH_NODE_PER_RANK=1

ceph_started=1
$DENO task -q ceph:up --dir "$CEPH_DIR" >"$OUT/ceph.env"
# shellcheck disable=SC1091
. "$OUT/ceph.env"
slurm_started=1
$DENO task -q slurm:up --dir "$SLURM_DIR" >"$OUT/slurm.env"
# shellcheck disable=SC1091
. "$OUT/slurm.env"

S3=s3://$TIERBENCH_S3_BUCKET/multinode
MPIRUN=(mpirun.openmpi --allow-run-as-root --oversubscribe -np 3 -x TIERBENCH_NODE_PER_RANK)
SRUN=(srun -n 3 --overcommit)
for launcher in mpirun srun; do
  for tier in "pfs:$TIERBENCH_PFS_DIR" "$S3"; do
    name=$([ "${tier%%:*}" = pfs ] && echo cephfs || echo rgw)
    for rw in write read; do
      echo "$launcher $name $rw $(date +%T)"
      if [ $launcher = mpirun ]; then cmd=("${MPIRUN[@]}"); else cmd=("${SRUN[@]}"); fi
      "${cmd[@]}" "${TB[@]}" run --tier "$tier" --endpoint "$TIERBENCH_S3_ENDPOINT" --rw $rw \
        --bs 1m --iodepth 8 --engine libaio --size 256m --runtime "$RUNTIME" --quiet \
        --output "$OUT/run-$launcher-$name-$rw.json" >"$OUT/run-$launcher-$name-$rw.txt"
    done
  done
done

echo "bench under mpirun $(date +%T)"
throttled "${MPIRUN[@]}" "${TB[@]}" bench --file-dir "$FILE_DIR" --pfs "$TIERBENCH_PFS_DIR" --s3 "$S3" \
  --endpoint "$TIERBENCH_S3_ENDPOINT" --quiet --output "$OUT/bench.json" >"$OUT/bench.txt"
"${TB[@]}" plan --profile "$OUT/bench.json" --model "$MODEL" --nodes 1,3 \
  --output "$OUT/plan.json" >"$OUT/plan.txt"

"$DENO_BIN" run -q --allow-read tools/bench/multinode_table.ts "$OUT" | tee "$OUT/summary.md"
