/**
 * The I/Os a job file makes are fio's own: for each job file below, fio
 * 3.33 runs it on its null engine with `--write_iolog`, and tierbench's
 * pattern (parse → resolve → OpStream) must give the same I/Os — file,
 * direction, offset, length, syncs — in the same order, for every clone.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { needing } from "../tests/_requirements.ts";
import { fio, iologOps } from "../tests/_fio.ts";
import { withTempDir } from "../tests/_helpers.ts";
import { parseJobFileText } from "./jobfile.ts";
import { hostResolveContext, resolveJobFile } from "./jobfile_resolve.ts";
import { hostKeywords } from "./fio_values.ts";
import { OP, OpStream } from "./io_pattern.ts";

/** Job files (one job each, fio's null engine) and what each exercises. */
const CASES: Record<string, string> = {
  "random map: every block once, a taken block giving way to the next free one":
    "rw=randread\nsize=1m\nbs=4k",
  "norandommap: offsets with replacement": "rw=randread\nsize=1m\nbs=4k\nnorandommap",
  "zipf:1.2 (ranks scattered by fio's hash, seeded by the file's jhash)":
    "rw=randread\nsize=64m\nbs=4k\nrandom_distribution=zipf:1.2\nnumber_ios=4000",
  "zipf with a center": "rw=randread\nsize=64m\nbs=4k\nrandom_distribution=zipf:0.8:0.3\n" +
    "number_ios=4000",
  "pareto:0.3": "rw=randread\nsize=64m\nbs=4k\nrandom_distribution=pareto:0.3\nnumber_ios=4000",
  "normal:10": "rw=randread\nsize=64m\nbs=4k\nrandom_distribution=normal:10\nnumber_ios=4000",
  "zoned:50/5:30/15:20/": "rw=randread\nsize=64m\nbs=4k\n" +
    "random_distribution=zoned:50/5:30/15:20/\nnumber_ios=4000",
  "zoned_abs": "rw=randread\nsize=64m\nbs=4k\n" +
    "random_distribution=zoned_abs:60/8m:30/16m:10/40m\nnumber_ios=4000",
  "bssplit, the random map trimming what overlaps": "rw=randread\nsize=16m\n" +
    "bssplit=4k/50:8k/30:64k/20",
  "bsrange": "rw=randwrite\nsize=16m\nbsrange=4k-32k\nnumber_ios=3000",
  "bsrange with bs_unaligned": "rw=randwrite\nsize=4m\nbsrange=1000-9000\nbs_unaligned\n" +
    "norandommap\nnumber_ios=2000",
  "bs=R,W with bs_is_seq_rand and percentage_random": "rw=randread\npercentage_random=50\n" +
    "bs=4k,64k\nbs_is_seq_rand=1\nsize=4m",
  "blockalign below the block size": "rw=randread\nsize=1m\nbs=8k\nba=4k",
  "randrw at rwmixread=70, in fio's rwmix cycles": "rw=randrw\nrwmixread=70\nsize=16m\nbs=4k",
  "rw (sequential mix), a cursor per direction": "rw=rw\nsize=1m\nbs=4k",
  "read:-8k: backwards": "rw=read:-8k\nsize=1m\nbs=4k",
  "write:8k: holes": "rw=write:8k\nsize=1m\nbs=4k",
  "randread:4: runs of 4": "rw=randread:4\nsize=1m\nbs=4k",
  "rw_sequencer=identical": "rw=randread:4\nrw_sequencer=identical\nsize=1m\nbs=4k",
  "percentage_random=60,20": "rw=randrw\npercentage_random=60,20\nsize=4m\nbs=4k",
  "nrfiles=3, roundrobin": "rw=read\nnrfiles=3\nsize=3m\nbs=4k",
  "file_service_type=roundrobin:4": "rw=randread\nnrfiles=3\nfile_service_type=roundrobin:4\n" +
    "size=3m\nbs=4k",
  "file_service_type=random": "rw=randwrite\nnrfiles=4\nfile_service_type=random\nsize=4m\nbs=4k",
  "file_service_type=sequential": "rw=write\nnrfiles=3\nfile_service_type=sequential\n" +
    "size=3m\nbs=4k",
  "filesize range": "rw=read\nnrfiles=3\nfilesize=1m-3m\nbs=4k",
  "offset": "rw=read\noffset=256k\nsize=1m\nbs=4k",
  "fsync=8 and fdatasync": "rw=randwrite\nfsync=8\nfdatasync=5\nsize=256k\nbs=4k",
  "loops=3 (the streams reseeded each loop)": "rw=randread\nloops=3\nsize=256k\nbs=4k",
  "io_size above size: another pass": "rw=read\nio_size=3m\nsize=1m\nbs=4k",
  "randseed (blocks still from fio's FIO_RANDSEED; sizes and mix from randseed)":
    "rw=randrw\nrandseed=42\nsize=1m\nbssplit=4k/50:16k/50",
  "numjobs=3 with offset_increment": "rw=randread\nsize=1m\nbs=4k\nnumjobs=3\n" +
    "offset_increment=1m",
  "number_ios": "rw=randread\nsize=1g\nbs=4k\nnumber_ios=500",
};

/** tierbench's I/Os of the job file's first job, every clone, in fio's iolog spelling. */
function tierbenchOps(text: string, dir: string): string[] {
  const parsed = parseJobFileText(text, join(dir, "j.fio"), { keywords: hostKeywords() });
  const job = resolveJobFile(parsed, { ...hostResolveContext(), cwd: dir }).jobs[0]!.job;
  const out: string[] = [];
  for (const clone of job.fio!.clones) {
    const s = new OpStream(clone.pattern);
    while (s.next()) {
      const name = clone.pattern.files[s.file]!.name;
      if (s.op === OP.FSYNC) out.push(`${name} sync`);
      else if (s.op === OP.FDATASYNC) out.push(`${name} datasync`);
      else out.push(`${name} ${s.op === OP.READ ? "read" : "write"} ${s.offset} ${s.length}`);
    }
  }
  return out;
}

/** fio's I/Os of the same file, grouped by file name prefix per clone in fio's order. */
async function fioOps(text: string, dir: string): Promise<string[]> {
  await Deno.writeTextFile(join(dir, "j.fio"), text);
  await fio(["--write_iolog=io.log", "--output-format=json", "j.fio"], dir);
  return iologOps(await Deno.readTextFile(join(dir, "io.log")));
}

Deno.test(
  needing(["fio"], {
    name: "a job file's I/Os are fio's: the same files, directions, offsets, lengths and " +
      "syncs, in the same order, as fio's write_iolog, for every distribution and size mix",
    async fn(t) {
      for (const [what, body] of Object.entries(CASES)) {
        await t.step(what, async () => {
          await withTempDir(async (dir) => {
            const text = `[j]\nioengine=null\n${body}\n`;
            const theirs = await fioOps(text, dir);
            const ours = tierbenchOps(text, dir);
            // fio logs the clones' I/Os as they interleave: compare each file's own order
            const byFile = (ops: string[]) => {
              const m = new Map<string, string[]>();
              for (const op of ops) {
                const f = op.split(" ")[0]!;
                m.set(f, [...(m.get(f) ?? []), op]);
              }
              return m;
            };
            assert.ok(theirs.length > 0, "fio did some I/O");
            assert.deepEqual(byFile(ours), byFile(theirs));
          });
        });
      }
    },
  }),
);
