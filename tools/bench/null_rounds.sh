#!/usr/bin/env bash
# The null tier of this checkout against another checkout's (BASE, e.g. a `git worktree add` of an
# older commit) and fio's null engine: 4 KiB random reads at depth 1, 1 s ramp + RUNTIME s each, in
# alternating rounds (the order reverses every other round). Prints each run's IOPS and its CPU per
# request in ns, (usr + sys) × runtime / requests, which a shared CPU moves far less than IOPS.
#
#   bash tools/bench/null_rounds.sh BASE [ROUNDS=5] [RUNTIME=5]
set -euo pipefail
base=$(cd "${1:?usage: tools/bench/null_rounds.sh BASE [ROUNDS] [RUNTIME]}" && pwd)
rounds=${2:-5}
runtime=${3:-5}
here=$(cd "$(dirname "$0")/../.." && pwd)
deno=$(npx -y deno@2.9.6 eval 'console.log(Deno.execPath())' 2>/dev/null)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

tierbench() { # DIR NAME
  (cd "$1" && "$deno" run --allow-all main.ts run --tier null: --rw randread --bs 4k \
    --runtime "$runtime" --ramp 1 --output "$out/$2.json" --quiet >/dev/null)
  python3 -c "
import json, sys
r = json.load(open(sys.argv[1]))['runs'][0]; x = r['read']
cpu = (r['cpu']['usr_pct'] + r['cpu']['sys_pct']) / 100 * x['runtime'] * 1e6 / x['total_ios']
print('%d IOPS %d ns' % (x['iops'], cpu))" "$out/$2.json"
}

fio_null() {
  fio --name=tb --rw=randread --bs=4096 --size=512m --runtime="$runtime" --time_based \
    --ramp_time=1 --ioengine=null --iodepth=1 --numjobs=1 --output-format=json |
    python3 -c "
import json, sys
j = json.load(sys.stdin)['jobs'][0]; x = j['read']
cpu = (j['usr_cpu'] + j['sys_cpu']) / 100 * j['job_runtime'] * 1e6 / x['total_ios']
print('%d IOPS %d ns' % (x['iops'], cpu))"
}

for r in $(seq 1 "$rounds"); do
  order="base this fio"
  if ((r % 2 == 0)); then order="fio this base"; fi
  line="round $r:"
  for t in $order; do
    case $t in
      base) v=$(tierbench "$base" base) ;;
      this) v=$(tierbench "$here" this) ;;
      fio) v=$(fio_null) ;;
    esac
    line="$line | $t $v"
  done
  echo "$line | load $(cut -d' ' -f1 /proc/loadavg)"
done
