/**
 * Test helper: real result documents for the report and compare tests,
 * made by the CLI (and, for a sweep grid, by {@linkcode runJob}) on this
 * machine's memory tier and a directory on the disk. Nothing is made up:
 * every figure comes from I/O that ran.
 *
 * @module
 */

import { join } from "node:path";
import { parseJobOptions } from "../core/config.ts";
import type { ResultDocument, RunResult } from "../schema/result.ts";
import { runJob } from "../bench/runner.ts";
import { openTier } from "../tiers/mod.ts";
import { ROOT, runCli } from "./_helpers.ts";
import { launchRanks } from "./_launch.ts";
import type { ReportDocument } from "../report/document.ts";
import type { SweepPoint, SweepTier } from "../schema/sweep.ts";

/** The reference profile a plan is made from (committed). */
export const REFERENCE_PROFILE = join(ROOT, "results/reference/polaris-4gpu-nvme-lustre.json");

/** Runs the CLI and throws with its output unless it exits 0. */
export async function cliOk(args: string[]): Promise<string> {
  const r = await runCli(args);
  if (r.code !== 0) {
    throw new Error(`tierbench ${args.join(" ")} exited ${r.code}: ${r.stderr}${r.stdout}`);
  }
  return r.stdout;
}

/** Reads a result document. */
export async function readDoc(path: string): Promise<ReportDocument> {
  return JSON.parse(await Deno.readTextFile(path)) as ReportDocument;
}

/** A 1 s randrw run (1 MiB, 8 deep, libaio) on `tier`, written to `output`. */
export async function randrwRun(tier: string, output: string, direct = false): Promise<void> {
  await cliOk([
    "run",
    "--tier",
    tier,
    "--rw",
    "randrw",
    "--bs",
    "1m",
    "--iodepth",
    "8",
    "--engine",
    "libaio",
    ...(direct ? ["--direct"] : []),
    "--size",
    "32m",
    "--runtime",
    "1",
    "--log-avg-msec",
    "250",
    "--quiet",
    "--output",
    output,
  ]);
}

/** A short contention matrix over memory and the disk directory `dir` (no mixed pairs). */
export async function contentionRun(dir: string, output: string): Promise<void> {
  await cliOk([
    "contention",
    "--tiers",
    `memory:/dev/shm,file:${dir}`,
    "--runtime",
    "1",
    "--ramp",
    "0",
    "--size",
    "16m",
    "--no-mixed",
    "--output",
    output,
  ]);
}

/** One zero-infinity iteration of 7B at scale 0.001 on the disk directory `dir`. */
export async function workloadRun(dir: string, output: string): Promise<void> {
  await cliOk([
    "workload",
    "zero-infinity",
    "--model",
    "7b",
    "--scale",
    "0.001",
    "--tiers",
    `file:${dir}`,
    "--iterations",
    "1",
    "--warmup",
    "0",
    "--quiet",
    "--output",
    output,
  ]);
}

/**
 * fio's recording of 4 KiB random reads and writes (trace/testdata/fio/)
 * imported and replayed onto `dir`.
 */
export async function traceReplayRun(dir: string, output: string): Promise<void> {
  const trace = join(dir, "fio-psync.trace.gz");
  const log = join(ROOT, "trace", "testdata", "fio", "fio-psync-4k-randrw.strace.gz");
  const data = "/var/tmp/tierbench-fio/data";
  await cliOk(["trace", "import", "strace", log, "--only", data, "--output", trace]);
  const map = `${data}=file:${dir}`;
  await cliOk(["trace", "replay", trace, "--map", map, "--quiet", "--output", output]);
}

/** A plan of 70B from the reference profile. */
export async function planRun(output: string): Promise<void> {
  await cliOk([
    "plan",
    "--profile",
    REFERENCE_PROFILE,
    "--model",
    "70b",
    "--ranks-per-node",
    "4",
    "--host-cache",
    "64g",
    "--output",
    output,
  ]);
}

/** The plan of {@linkcode planRun} replayed on two directories of `dir`, with its activations. */
export async function replayRun(dir: string, plan: string, output: string): Promise<void> {
  const [local, remote] = [join(dir, "replay-nvme"), join(dir, "replay-lustre")];
  await Deno.mkdir(local, { recursive: true });
  await Deno.mkdir(remote, { recursive: true });
  await cliOk([
    ...["replay", plan, "--tiers", `file:${local},pfs:${remote}`, "--scale", "0.0001"],
    ...["--iterations", "1", "--warmup", "0", "--activations", "--quiet", "--output", output],
  ]);
}

/**
 * A sweep document by the contract of `doc.sweep`, its points measured
 * here: memory-tier reads at 2 block sizes × 2 depths, 8 MiB each (the
 * `sweep` command's own grid is another engineer's; this only feeds the
 * report). `base` lends the host facts.
 */
export async function sweepDoc(base: ResultDocument): Promise<ReportDocument> {
  const runs: RunResult[] = [];
  const points: SweepPoint[] = [];
  await using tier = openTier(parseJobOptions({ tier: "memory:", size: "8m" }).tier);
  await tier.setup();
  for (const bs of ["128k", "1m"]) {
    for (const iodepth of ["1", "4"]) {
      const job = parseJobOptions({
        tier: "memory:",
        rw: "read",
        bs,
        iodepth,
        engine: "libaio",
        size: "8m",
        ioSize: "8m",
      });
      const r = await runJob(tier, job);
      runs.push(r);
      points.push({
        bs: r.options.bs,
        iodepth: r.options.iodepth,
        numjobs: r.options.numjobs,
        bw_bytes: r.read.bw_bytes,
        iops: r.read.iops,
        lat_p50_ns: r.read.lat_ns.percentile["50.000000"] ?? 0,
        lat_p99_ns: r.read.lat_ns.percentile["99.000000"] ?? 0,
        runtime_ms: r.read.runtime,
        steady: false,
        run: runs.length - 1,
      });
    }
  }
  const best = points.reduce((a, b) => (b.bw_bytes > a.bw_bytes ? b : a));
  const t: SweepTier = { tier: "memory:/dev/shm", rw: "read", points, best, aio: {} };
  return {
    ...base,
    kind: "sweep" as string as ResultDocument["kind"],
    runs,
    sweep: { criterion: "fixed: 8 MiB per point (test grid)", tiers: [t] },
  };
}

/**
 * `bench --quick` across two processes started torchrun-style, each a node
 * of its own, with `dir` (on the disk) as the shared tier: a profile with
 * the concurrency curves and the shared tier's scaling curve at 1 and 2
 * nodes, written by rank 0 to `output`.
 */
export async function benchAcrossRun(dir: string, output: string): Promise<void> {
  const ranks = launchRanks(2, [
    "bench",
    "--quick",
    "--no-file",
    "--pfs",
    dir,
    "--size",
    "8m",
    "--ranks-per-node",
    "2",
    "--concurrency-bs",
    "1m,2m",
    "--quiet",
    "--output",
    output,
  ]);
  const outcomes = await ranks.done();
  for (const [rank, o] of outcomes.entries()) {
    if (o.code !== 0) {
      throw new Error(`bench rank ${rank} exited ${o.code}: ${o.stderr}${o.stdout}`);
    }
  }
}
