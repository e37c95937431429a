import assert from "node:assert/strict";
import { join } from "node:path";
import { runCli, scratchLeft, spawnCli, withTempDir } from "../tests/_helpers.ts";
import { DEEPSPEED_KEY_SETS } from "../solver/deepspeed_keys.ts";
import type { ResultDocument } from "../schema/result.ts";
import {
  bwSlopePct,
  isSteady,
  pickBest,
  planSweep,
  runSweep,
  sweepAio,
  TIE_MARGIN,
} from "./sweep.ts";
import type { SweepPoint } from "../schema/sweep.ts";
import { ioUringRefusal } from "../engines/io_uring.ts";
import { partialPathOf } from "../core/output_file.ts";

const GRID = { bs: ["64k", "128k"], iodepth: [1, 4], numjobs: [1, 2] };

Deno.test("sweep runs every point of a small grid on a file tier, picks the best and writes it", async () => {
  await withTempDir(async (dir) => {
    const output = join(dir, "sweep.json");
    const r = await runCli([
      "sweep",
      "--tier",
      `file:${dir}`,
      "--bs",
      GRID.bs.join(","),
      "--iodepth",
      GRID.iodepth.join(","),
      "--numjobs",
      GRID.numjobs.join(","),
      "--size",
      "4m",
      "--runtime",
      "300ms",
      "--ramp",
      "0",
      "--deepspeed-version",
      "0.13.3",
      "--output",
      output,
    ]);
    assert.deepEqual(r.code, 0, r.stderr);
    assert.deepEqual(await scratchLeft(dir), []);
    const doc = JSON.parse(await Deno.readTextFile(output)) as ResultDocument;
    assert.deepEqual(doc.kind, "sweep");
    assert.deepEqual(doc.status, "ok");
    const sweep = doc.sweep!;
    assert(sweep.criterion.includes("bw_slope"));
    assert.deepEqual(sweep.tiers.length, 1);
    const t = sweep.tiers[0]!;
    assert.deepEqual(t.tier, `file:${dir}`);
    assert.deepEqual(t.rw, "read");
    // every point of the grid, once, each pointing at its own ok run
    const want = GRID.bs.flatMap((bs) =>
      GRID.numjobs.flatMap((j) =>
        GRID.iodepth.map((d) => `${bs === "64k" ? 65536 : 131072} ${d} ${j}`)
      )
    );
    assert.deepEqual(t.points.map((p) => `${p.bs} ${p.iodepth} ${p.numjobs}`).sort(), want.sort());
    assert.deepEqual(doc.runs.length, want.length);
    for (const p of t.points) {
      const run = doc.runs[p.run]!;
      assert.deepEqual(run.status, "ok");
      assert.deepEqual([run.options.bs, run.options.iodepth, run.options.numjobs], [
        p.bs,
        p.iodepth,
        p.numjobs,
      ]);
      assert.deepEqual(run.options.direct, true);
      assert.deepEqual(p.bw_bytes, run.read.bw_bytes);
      assert(p.bw_bytes > 0 && p.iops > 0 && p.lat_p99_ns >= p.lat_p50_ns);
    }
    // best: within the margin of the highest, and no point that near has fewer I/Os in flight
    const max = Math.max(...t.points.map((p) => p.bw_bytes));
    assert(t.best.bw_bytes >= max * (1 - TIE_MARGIN));
    assert(t.points.includes(t.points.find((p) => p.run === t.best.run)!));
    for (const p of t.points) {
      if (p.bw_bytes >= max * (1 - TIE_MARGIN)) {
        assert(p.iodepth * p.numjobs >= t.best.iodepth * t.best.numjobs);
      }
    }
    // the aio block: exactly 0.13.3's keys, at the best setting
    assert.deepEqual(
      Object.keys(t.aio).sort(),
      Object.keys(DEEPSPEED_KEY_SETS["0.13.3"]!.aio).sort(),
    );
    assert.deepEqual(t.aio.block_size, t.best.bs);
    assert.deepEqual(t.aio.queue_depth, t.best.iodepth);
    assert.deepEqual(t.aio.thread_count, t.best.numjobs);
    // and the terminal says it
    assert.match(r.stdout, /best on file:.* read: bs \d+k, iodepth \d, numjobs \d/);
    assert(r.stdout.includes('"thread_count"'));
    assert.match(r.stdout, /criterion: fixed time/);
  });
});

Deno.test({
  name: "sweep --engine io_uring runs every point with io_uring, the choice in the config",
  ignore: ioUringRefusal() !== undefined,
  fn: () =>
    withTempDir(async (dir) => {
      const output = join(dir, "sweep.json");
      const r = await runCli([
        "sweep",
        "--tier",
        `file:${dir}`,
        "--bs",
        "64k",
        "--iodepth",
        "1,4",
        "--numjobs",
        "1",
        "--size",
        "2m",
        "--runtime",
        "200ms",
        "--ramp",
        "0",
        "--engine",
        "io_uring",
        "--quiet",
        "--output",
        output,
      ]);
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(await scratchLeft(dir), []);
      const doc = JSON.parse(await Deno.readTextFile(output)) as ResultDocument;
      assert.equal(doc.status, "ok");
      assert.equal(doc.config.engine, "io_uring");
      assert.equal(doc.runs.length, 2);
      for (const run of doc.runs) {
        assert.equal(run.status, "ok");
        assert.equal(run.options.engine, "io_uring");
        assert.ok(run.options.io_uring!.features.length > 0);
        assert.ok(run.read.io_bytes > 0);
      }
    }),
});

Deno.test("pickBest() with no margin is the highest bandwidth, and a tie goes to fewer I/Os in flight", () => {
  const p = (iodepth: number, numjobs: number, bw: number, run: number): SweepPoint => ({
    bs: 1 << 20,
    iodepth,
    numjobs,
    bw_bytes: bw,
    iops: bw / (1 << 20),
    lat_p50_ns: 1,
    lat_p99_ns: 2,
    runtime_ms: 1000,
    steady: true,
    run,
  });
  const points = [p(64, 4, 1000, 0), p(16, 1, 990, 1), p(4, 2, 960, 2), p(1, 1, 500, 3)];
  assert.deepEqual(pickBest(points, 0).run, 0);
  // 990 and 960 are within 5 % of 1000: 4×2 = 8 in flight beats 16 and 256
  assert.deepEqual(pickBest(points).run, 2);
});

Deno.test("bwSlopePct() is fio's bw_slope in % of the mean per sample", () => {
  assert.deepEqual(bwSlopePct([5, 5, 5, 5]), 0);
  assert(Math.abs(bwSlopePct([100, 110, 120]) - 10 / 110 * 100) < 1e-9);
  assert.deepEqual(bwSlopePct([0, 0, 0]), Infinity);
  assert(isSteady([50, 100, 101, 100], 3, 2));
  assert(!isSteady([50, 100, 101, 100], 4, 2));
  assert(!isSteady([100, 100], 3, 2));
});

Deno.test("sweepAio() writes each DeepSpeed version's own aio keys, nothing for tiers it cannot swap to", () => {
  const point = { bs: 8 << 20, iodepth: 16, numjobs: 4 };
  for (const [version, keys] of Object.entries(DEEPSPEED_KEY_SETS)) {
    const aio = sweepAio({ kind: "file", path: "/mnt/nvme" }, point, version as "0.13.3");
    assert.deepEqual(Object.keys(aio).sort(), Object.keys(keys.aio).sort());
    assert.deepEqual(aio[keys.threadKey], 4);
  }
  assert.deepEqual(sweepAio({ kind: "memory", path: "/dev/shm" }, point, "0.16.9"), {});
});

Deno.test("a steady sweep stops a point once the slope test holds, or runs it to its runtime", async () => {
  const plan = planSweep({
    tiers: [{ kind: "null", path: "" }],
    bs: "4k",
    iodepth: "1",
    numjobs: "1,2",
    size: "1m",
    steady: true,
    runtime: "5",
    ramp: "0",
    ssDur: "3",
  });
  const { doc } = await runSweep(plan);
  assert.deepEqual(doc.status, "ok");
  const points = doc.sweep!.tiers[0]!.points;
  assert.deepEqual(points.length, 2);
  for (const p of points) {
    // three one-second samples before it can hold; the full 5 s when it never did
    if (p.steady) assert(p.runtime_ms >= 3000 && p.runtime_ms <= 5000 + 1000, `${p.runtime_ms}`);
    else assert.deepEqual(p.runtime_ms, 5000);
    assert.deepEqual(doc.runs[p.run]!.status, "ok");
  }
  assert(doc.sweep!.criterion.startsWith("bw_slope"));
});

for (
  const [args, field] of [
    [["--bs", "3k"], "--bs"],
    [["--iodepth", "0"], "--iodepth"],
    [["--numjobs", "1,x"], "--numjobs"],
    [["--bs", ","], "--bs"],
    [["--iodepth", ""], "--iodepth"],
    [["--rw", "sideways"], "--rw"],
    [["--deepspeed-version", "0.1"], "--deepspeed-version"],
  ] as const
) {
  Deno.test(`sweep refuses ${args.join(" ") || "nothing"} with exit 2 naming ${field}`, async () => {
    await withTempDir(async (dir) => {
      const r = await runCli(["sweep", "--tier", `file:${dir}`, ...args]);
      assert.deepEqual(r.code, 2, r.stderr);
      const lines = r.stderr.trim().split("\n");
      assert.deepEqual(lines.length, 1, r.stderr);
      assert.match(lines[0]!, new RegExp(`^tierbench: ${field}: `));
      assert.deepEqual(await scratchLeft(dir), []);
    });
  });
}

Deno.test("sweep refuses to run without a tier, exit 2 naming --tier", async () => {
  const r = await runCli(["sweep", "--bs", "1m"]);
  assert.deepEqual(r.code, 2);
  assert.match(r.stderr.trim(), /^tierbench: --tier: is required/);
});

Deno.test("sweep stops on SIGINT: exit 1, partial results written, scratch removed", async () => {
  await withTempDir(async (dir) => {
    const output = join(dir, "partial.json");
    const child = spawnCli([
      "sweep",
      "--tier",
      `file:${dir}`,
      "--bs",
      "64k",
      "--iodepth",
      "1,2,4",
      "--numjobs",
      "1",
      "--size",
      "4m",
      "--runtime",
      "20",
      "--ramp",
      "0",
      "--output",
      output,
    ]);
    // wait for the first point's scratch directory, then for it to be measuring
    for (let i = 0; i < 600 && (await scratchLeft(dir)).length === 0; i++) {
      await new Promise((r) => setTimeout(r, 50));
    }
    await new Promise((r) => setTimeout(r, 1500));
    child.kill("SIGINT");
    const out = await child.output();
    const stderr = new TextDecoder().decode(out.stderr);
    assert.deepEqual(out.code, 1, stderr);
    assert.match(stderr, /interrupted by SIGINT/);
    assert.deepEqual(await scratchLeft(dir), []);
    const doc = JSON.parse(await Deno.readTextFile(partialPathOf(output))) as ResultDocument;
    assert.deepEqual(doc.kind, "sweep");
    assert.deepEqual(doc.status, "interrupted");
    assert(doc.runs.length >= 1 && doc.runs.length < 3);
    assert.deepEqual(doc.runs.at(-1)!.status, "interrupted");
  });
});

Deno.test("sweepAio() takes any DeepSpeed release: thread_count up to 0.16.3, intra_op_parallelism from 0.16.4", () => {
  const point = { bs: 1 << 20, iodepth: 8, numjobs: 2 };
  const old = sweepAio({ kind: "file", path: "/mnt/nvme" }, point, "0.14.4");
  assert.equal(old.thread_count, 2);
  assert.equal(old.intra_op_parallelism, undefined);
  const current = sweepAio({ kind: "file", path: "/mnt/nvme" }, point, "0.16.4");
  assert.equal(current.intra_op_parallelism, 2);
  assert.equal(current.thread_count, undefined);
});
