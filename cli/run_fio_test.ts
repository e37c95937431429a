import assert from "node:assert/strict";
import { join } from "node:path";
import { runCli, scratchLeft, withTempDir } from "../tests/_helpers.ts";
import { needing } from "../tests/_requirements.ts";
import { clat2csv, fio } from "../tests/_fio.ts";

/** A job file as a fio user writes one: a write, then (stonewall) two reads at once. */
function jobFile(dir: string): string {
  return `; tiny jobs on a temp dir
[global]
directory=${dir}
size=1m
bs=4k
ioengine=psync
randseed=7

[w]
rw=write
end_fsync=1

# the second group: two jobs at once
[r1]
stonewall
rw=read

[r2]
rw=randread
`;
}

type Obj = Record<string, unknown>;

function keys(o: unknown): string[] {
  return Object.keys(o as Obj).sort();
}

Deno.test(
  needing(["fio"], {
    name: "tierbench run JOB.fio --output-format fio-json writes fio's document: its keys, " +
      "options, groups and byte counts as fio's own for the same file",
    async fn() {
      await withTempDir(async (dir) => {
        const tbDir = join(dir, "tb");
        const fioDir = join(dir, "fio");
        await Deno.mkdir(tbDir);
        await Deno.mkdir(fioDir);
        await Deno.writeTextFile(join(dir, "tb.fio"), jobFile(tbDir));
        await Deno.writeTextFile(join(dir, "fio.fio"), jobFile(fioDir));
        const r = await runCli([
          "run",
          join(dir, "tb.fio"),
          "--output-format",
          "fio-json",
          "--output",
          "-",
        ]);
        assert.equal(r.code, 0, r.stderr);
        const tb = JSON.parse(r.stdout) as Obj; // stdout holds the document alone
        const theirs = JSON.parse(
          await fio(["--output-format=json", join(dir, "fio.fio")]),
        ) as Obj;

        assert.deepEqual(keys(tb), keys(theirs));
        const global = (d: Obj) => ({ ...(d["global options"] as Obj), directory: "" });
        assert.deepEqual(global(tb), global(theirs));
        const tbJobs = tb.jobs as Obj[];
        const fioJobs = theirs.jobs as Obj[];
        assert.equal(tbJobs.length, fioJobs.length);
        for (const [i, t] of tbJobs.entries()) {
          const f = fioJobs[i]!;
          assert.deepEqual(keys(t), keys(f), `job ${i}'s keys`);
          for (const k of ["jobname", "groupid", "error", "job options"]) {
            assert.deepEqual(t[k], f[k], `job ${i} ${k}`);
          }
          for (const k of ["latency_ns", "latency_us", "latency_ms", "iodepth_level"]) {
            assert.deepEqual(keys(t[k]), keys(f[k]), `job ${i} ${k}'s buckets`);
          }
          for (const dir of ["read", "write", "trim"]) {
            const td = t[dir] as Obj;
            const fd = f[dir] as Obj;
            assert.deepEqual(keys(td), keys(fd), `job ${i} ${dir}'s keys`);
            for (const lat of ["slat_ns", "clat_ns", "lat_ns"]) {
              assert.deepEqual(keys(td[lat]), keys(fd[lat]), `job ${i} ${dir}.${lat}'s keys`);
            }
            if ("percentile" in (fd.clat_ns as Obj)) {
              assert.deepEqual(
                keys((td.clat_ns as Obj).percentile),
                keys((fd.clat_ns as Obj).percentile),
              );
            }
            // size-based jobs: the bytes and I/Os are the job file's, in both
            for (const k of ["io_bytes", "io_kbytes", "total_ios"]) {
              assert.equal(td[k], fd[k], `job ${i} ${dir}.${k}`);
            }
          }
        }
        assert.deepEqual(await scratchLeft(tbDir), []);
      });
    },
  }),
);

Deno.test(
  needing(["fio"], {
    name: "fio_jsonplus_clat2csv reads tierbench's json+ as it reads fio's: the same CSV " +
      "columns, and every bin it wrote checks out against the document",
    async fn() {
      await withTempDir(async (dir) => {
        await Deno.writeTextFile(join(dir, "job.fio"), jobFile(dir));
        const tbJson = join(dir, "tb.json");
        const r = await runCli([
          "run",
          join(dir, "job.fio"),
          "--output-format",
          "json+",
          "--output",
          tbJson,
        ]);
        assert.equal(r.code, 0, r.stderr);
        const fioJson = join(dir, "fio.json");
        await Deno.writeTextFile(
          fioJson,
          await fio(["--output-format=json+", join(dir, "job.fio")]),
        );
        const tb = await clat2csv(tbJson, join(dir, "tb.csv"));
        const theirs = await clat2csv(fioJson, join(dir, "fio.csv"));
        assert.equal(tb.header, theirs.header);
        assert.equal(tb.jobs, 3);
        assert.equal(theirs.jobs, 3);
        const doc = JSON.parse(await Deno.readTextFile(tbJson));
        const bins = doc.jobs[1].read.clat_ns.bins as Record<string, number>;
        assert.equal(
          Object.values(bins).reduce((a, b) => a + b, 0),
          doc.jobs[1].read.total_ios,
        );
      });
    },
  }),
);

Deno.test("tierbench run --ioengine=psync --ramp_time=0 --direct=0 --io_size=…: fio's spellings run as tierbench's", async () => {
  await withTempDir(async (dir) => {
    const r = await runCli([
      "run",
      `--tier=file:${dir}`,
      "--rw=randread",
      "--bs=4k",
      "--size=1m",
      "--io_size=512k",
      "--ioengine=psync",
      "--ramp_time=0",
      "--direct=0",
      "--randseed=3",
      "--log_avg_msec=500",
      "--numjobs=1",
      "--output",
      "-",
    ]);
    assert.equal(r.code, 0, r.stderr);
    const doc = JSON.parse(r.stdout);
    const o = doc.runs[0].options;
    assert.equal(o.engine, "psync");
    assert.equal(o.direct, false);
    assert.equal(o.io_size, 512 * 1024);
    assert.equal(o.seed, 3);
    assert.equal(o.log_avg_msec, 500);
    assert.equal(doc.runs[0].read.io_bytes, 512 * 1024);
  });
});

Deno.test("tierbench run: a fio spelling and tierbench's of the same option together are refused", async () => {
  const r = await runCli(["run", "--tier", "null:", "--engine", "psync", "--ioengine", "libaio"]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--ioengine.*cannot be used with.*--engine/);
});

Deno.test("tierbench run JOB.fio: a device-only option is refused by name and line, exit 2, one line", async () => {
  await withTempDir(async (dir) => {
    const file = join(dir, "bad.fio");
    await Deno.writeTextFile(file, `[global]\ndirectory=${dir}\n\n[a]\nrw=read\nzonemode=zbd\n`);
    const r = await runCli(["run", file]);
    assert.equal(r.code, 2);
    assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
    assert.match(r.stderr, new RegExp(`^tierbench: ${file}:6: zonemode: .*zoned block devices`));
  });
});

Deno.test("tierbench run JOB.fio: a bad value is said at its key's line; tierbench's own --verify beside a file is refused", async () => {
  await withTempDir(async (dir) => {
    const file = join(dir, "bad.fio");
    await Deno.writeTextFile(file, `[a]\ndirectory=${dir}\nbs=4k\nrw=sideways\n`);
    const r = await runCli(["run", file]);
    assert.equal(r.code, 2);
    assert.match(
      r.stderr,
      new RegExp(`^tierbench: ${file}:4: rw: sideways: "sideways" is not one of`),
    );
    const r2 = await runCli(["run", file, "--verify"]);
    assert.equal(r2.code, 2);
    assert.match(r2.stderr, /--verify: has no meaning beside a job file/);
  });
});
