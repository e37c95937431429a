import assert from "node:assert/strict";
import { join } from "node:path";
import { runCli, withTempDir } from "../tests/_helpers.ts";
import { needing } from "../tests/_requirements.ts";
import { clat2csv } from "../tests/_fio.ts";

type Obj = Record<string, unknown>;

/** A sweep of two points on the null tier, short: its arguments. */
const TWO_POINTS = [
  "sweep",
  "--tier",
  "null:",
  "--bs",
  "4k,8k",
  "--iodepth",
  "1",
  "--numjobs",
  "1",
  "--runtime",
  "0.2",
  "--quiet",
];

Deno.test(
  needing(["fio"], {
    name: "sweep --output-format json+ --output -: stdout is fio's document alone, a job per " +
      "point in its own group, and fio_jsonplus_clat2csv reads and validates every one",
    async fn() {
      await withTempDir(async (dir) => {
        const r = await runCli([
          ...TWO_POINTS,
          "--ramp_time",
          "0",
          "--output-format",
          "json+",
          "--output",
          "-",
        ]);
        assert.equal(r.code, 0, r.stderr);
        const doc = JSON.parse(r.stdout) as Obj; // the whole of stdout parses
        const jobs = doc.jobs as Obj[];
        assert.deepEqual(jobs.map((j) => j.jobname), ["null read 4k d1 j1", "null read 8k d1 j1"]);
        assert.deepEqual(jobs.map((j) => j.groupid), [0, 1]);
        assert.deepEqual(jobs.map((j) => (j["job options"] as Obj).bs), ["4096", "8192"]);
        // the grid and the best setting went to stderr
        assert.match(r.stderr, /best on null/);
        const json = join(dir, "sweep.json");
        await Deno.writeTextFile(json, r.stdout);
        const csv = await clat2csv(json, join(dir, "sweep.csv"));
        assert.equal(csv.jobs, 2);
        assert.match(csv.header, /^nsec, read_slat_ns_count, .*read_clat_ns_count, /);
        for (const j of jobs) {
          const read = j.read as { total_ios: number; clat_ns: { bins: Record<string, number> } };
          const binned = Object.values(read.clat_ns.bins).reduce((a, b) => a + b, 0);
          assert.equal(binned, read.total_ios);
        }
      });
    },
  }),
);

Deno.test("sweep --ramp_time, --ioengine, --direct=0: fio's spellings set what --ramp, --engine and --no-direct do", async () => {
  const r = await runCli([
    ...TWO_POINTS,
    "--bs",
    "4k",
    "--ramp_time",
    "0.1",
    "--ioengine",
    "io_uring",
    "--direct=0",
    "--output",
    "-",
  ]);
  assert.equal(r.code, 0, r.stderr);
  const doc = JSON.parse(r.stdout);
  assert.equal(doc.config.ramp, "0.1");
  assert.equal(doc.config.engine, "io_uring");
  assert.equal(doc.config.direct, false);
  assert.equal(doc.runs[0].ramp.ms, 100);
});

Deno.test("sweep and contention: a fio spelling beside tierbench's of the same option is refused, exit 2", async () => {
  const sweep = await runCli([...TWO_POINTS, "--ramp", "0", "--ramp_time", "0"]);
  assert.equal(sweep.code, 2);
  assert.match(sweep.stderr, /--ramp_time.*cannot be used with.*--ramp/);
  const contention = await runCli([
    "contention",
    "--tiers",
    "memory:,file:/tmp",
    "--engine",
    "libaio",
    "--ioengine",
    "io_uring",
  ]);
  assert.equal(contention.code, 2);
  assert.match(contention.stderr, /--ioengine.*cannot be used with.*--engine/);
  const normal = await runCli([...TWO_POINTS, "--output-format", "normal", "--output", "-"]);
  assert.equal(normal.code, 2);
  assert.match(normal.stderr, /--output: - with --output-format normal/);
});

Deno.test("workload and bench: --ioengine and --ramp_time are fio's names for --engine and --ramp, refused beside them", async () => {
  const workload = await runCli([
    "workload",
    "zero-infinity",
    "--tiers",
    "memory:",
    "--engine",
    "libaio",
    "--ioengine",
    "io_uring",
  ]);
  assert.equal(workload.code, 2);
  assert.match(workload.stderr, /--ioengine.*cannot be used with.*--engine/);
  const bench = await runCli(["bench", "--quick", "--ramp", "0", "--ramp_time", "0"]);
  assert.equal(bench.code, 2);
  assert.match(bench.stderr, /--ramp_time.*cannot be used with.*--ramp/);
});
