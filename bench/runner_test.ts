import assert from "node:assert/strict";
import { openTier } from "../tiers/mod.ts";
import { tempDirOnDisk } from "../tests/_helpers.ts";
import { parseJobOptions } from "../core/config.ts";
import { decodeHistogram } from "../core/recorder.ts";
import { runJob } from "./runner.ts";
import { runRawJob as run } from "../tests/_run_job.ts";

const MiB = 1024 * 1024;

Deno.test("runJob() moves exactly io_size per job on the file tier with O_DIRECT (psync)", async () => {
  const dir = await tempDirOnDisk();
  try {
    const r = await run({
      tier: `file:${dir}`,
      rw: "read",
      bs: "64k",
      size: "8m",
      ioSize: "16m",
      numjobs: "2",
      direct: true,
    });
    assert.equal(r.status, "ok");
    assert.equal(r.tier.direct, "honoured");
    assert.equal(r.read.io_bytes, 2 * 16 * MiB);
    assert.equal(r.read.total_ios, 2 * 256);
    assert.equal(r.read.lat_ns.N, 512);
    assert.equal(r.read.slat_ns.N, 0, "psync has no separate submission");
    assert.deepEqual(r.read.clat_ns.percentile, r.read.lat_ns.percentile);
    assert.equal(r.write.io_bytes, 0);
    assert.ok(r.read.bw_bytes > 0 && r.read.iops > 0);
    assert.equal(r.jobs.length, 2);
    assert.ok(r.read.first_done.io_bytes <= r.read.last_done.io_bytes);
    assert.equal(decodeHistogram(r.read.hist!.lat).totalCount, 512);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("runJob() keeps iodepth I/Os in flight with libaio and separates slat from clat", async () => {
  const dir = await tempDirOnDisk();
  try {
    const r = await run({
      tier: `file:${dir}`,
      rw: "randread",
      bs: "4k",
      size: "8m",
      ioSize: "8m",
      iodepth: "16",
      engine: "libaio",
      direct: true,
    });
    assert.equal(r.status, "ok", r.error);
    assert.equal(r.read.total_ios, 2048);
    assert.equal(r.read.slat_ns.N, 2048);
    assert.equal(r.read.clat_ns.N, 2048);
    assert.ok(r.read.lat_ns.max >= r.read.clat_ns.min);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("runJob() writes fresh files and splits randrw by rwmixread", async () => {
  const dir = await tempDirOnDisk();
  try {
    const r = await run({
      tier: `file:${dir}`,
      rw: "randrw",
      rwmixread: "75",
      bs: "4k",
      size: "4m",
      ioSize: "16m",
      engine: "libaio",
      iodepth: "4",
    });
    assert.equal(r.status, "ok", r.error);
    const total = r.read.total_ios + r.write.total_ios;
    assert.equal(total, 4096);
    const share = r.read.total_ios / total;
    assert.ok(share > 0.7 && share < 0.8, `read share ${share}`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("runJob() on the memory tier states that O_DIRECT is not honoured", async () => {
  const r = await run({ tier: "memory:", rw: "write", bs: "1m", size: "8m", direct: true });
  assert.equal(r.status, "ok");
  assert.equal(r.tier.direct, "ignored");
  assert.equal(r.tier.fs?.fs_type, "tmpfs");
  assert.equal(r.write.io_bytes, 8 * MiB);
});

Deno.test("runJob() time-based: excludes the ramp and samples a time series", async () => {
  const r = await run({
    tier: "null:",
    rw: "randread",
    bs: "4k",
    size: "1m",
    runtime: "600ms",
    ramp: "200ms",
    logAvgMsec: "100",
  });
  assert.equal(r.status, "ok");
  assert.equal(r.read.runtime, 600);
  assert.deepEqual(r.ramp, { ms: 200, excluded: true });
  assert.ok(r.read.total_ios > 0);
  assert.ok(r.timeseries.t_ms.length >= 1);
  assert.ok(r.timeseries.t_ms.every((t) => t > 0), "no sample from the ramp");
  assert.equal(r.timeseries.read_iops.length, r.timeseries.t_ms.length);
});

Deno.test("runJob() gives every job the run's window: jobs woken late on few cores still end by its runtime", async () => {
  // 16 spinning jobs on this 2-core machine: each used to count its runtime from its own
  // wake-up, and the last woke hundreds of ms after the first (its end_ms past 600)
  const r = await run({
    tier: "null:",
    rw: "randread",
    bs: "4k",
    size: "1m",
    runtime: "500ms",
    ramp: "0",
    numjobs: "16",
  });
  assert.equal(r.status, "ok");
  assert.equal(r.jobs.length, 16);
  for (const j of r.jobs) {
    assert.ok(j.end_ms > 0 && j.end_ms <= 501, `job ${j.job} ended at ${j.end_ms} ms`);
    assert.ok(j.read_bytes > 0, `job ${j.job} read nothing`);
  }
});

Deno.test("runJob() counts the job threads' own CPU time over the measured window, apart from the ramp", async () => {
  const r = await run({
    tier: "null:",
    rw: "randread",
    bs: "4k",
    size: "1m",
    runtime: "600ms",
    ramp: "300ms",
    numjobs: "2",
  });
  assert.equal(r.status, "ok");
  const jobs = r.cpu.jobs!;
  const ns = jobs.usr_ns + jobs.sys_ns;
  // The null tier's jobs spin on a core each while they can: CPU time, mostly user time.
  assert.ok(jobs.usr_ns > 0 && jobs.usr_ns > jobs.sys_ns, JSON.stringify(jobs));
  // At most two threads for the measured 600 ms (not the 900 ms with the ramp), within
  // getrusage's ticks; and no more than the whole process spent meanwhile.
  assert.ok(ns <= 2 * 0.6e9 * 1.05, `${ns} ns`);
  const processNs = ((r.cpu.usr_pct + r.cpu.sys_pct) / 100) * 0.6e9;
  assert.ok(ns <= processNs * 1.05 + 20e6, `jobs ${ns} ns, process ${processNs} ns`);
});

Deno.test("runJob() on abort stops the jobs and reports what was measured", async () => {
  const job = parseJobOptions({ tier: "null:", rw: "read", bs: "4k", size: "1m", runtime: "60" });
  await using tier = openTier(job.tier);
  await tier.setup();
  const controller = new AbortController();
  const started = runJob(tier, job, {
    signal: controller.signal,
    onProgress: (p) => {
      if (p.phase === "measure" && p.readBytes > 0) controller.abort();
    },
  });
  const r = await started;
  assert.equal(r.status, "interrupted");
  assert.ok(r.read.io_bytes > 0);
});
