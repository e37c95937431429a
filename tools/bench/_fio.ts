/**
 * fio and tierbench as subprocesses, for `tools/bench/fio_compare.ts`: one access
 * pattern spelled as arguments for each tool, and the figures read back from
 * each tool's JSON output (fio's `--output-format=json`, tierbench's result
 * document).
 *
 * @module
 */

import type { ResultDocument } from "../../schema/result.ts";

/** One access pattern, run the same way by both tools. */
export interface Pattern {
  readonly rw: "read" | "write" | "randread";
  /** Block size in bytes. */
  readonly bs: number;
  /** File size in bytes. */
  readonly size: number;
  /** `null`: no I/O at all — fio's null engine, tierbench's null tier. */
  readonly engine: "psync" | "libaio" | "io_uring" | "null";
  readonly iodepth: number;
  readonly direct: boolean;
  /** io_uring only: fio's fixedbufs and registerfiles, both on. */
  readonly registered?: boolean;
  /** The CPUs each tool's job thread is pinned to (fio's cpus_allowed, `1`, `0-3`); absent: none. */
  readonly cpusAllowed?: string;
  /** Measured seconds (time-based). */
  readonly runtimeS: number;
  /** Warm-up seconds, excluded by both tools. */
  readonly rampS: number;
}

/** The direction a pattern moves data in. */
export function direction(p: Pick<Pattern, "rw">): "read" | "write" {
  return p.rw === "write" ? "write" : "read";
}

/** What one run of either tool measured, in one direction. */
export interface Figures {
  bw_bytes: number;
  iops: number;
  io_bytes: number;
  /** Measured time in ms. */
  runtime_ms: number;
  /** Mean total latency in ns. */
  lat_mean_ns: number;
  /** CPU of the tool's process, % of one core. */
  usr_cpu: number;
  sys_cpu: number;
  /**
   * CPU time per I/O of the tool's I/O threads, ns, user and system apart:
   * for fio its job's usr_cpu and sys_cpu × job_runtime ÷ the job's I/Os
   * (fio counts them with getrusage RUSAGE_THREAD from the end of the ramp);
   * for tierbench its job threads' CPU over the same window ÷ its I/Os.
   */
  cpu_per_io_ns: CpuPerIo;
}

/** CPU time per I/O, ns. */
export interface CpuPerIo {
  usr: number;
  sys: number;
}

/** A tool ran but its output says it failed, or cannot be read. */
export class ToolOutputError extends Error {
  override name = "ToolOutputError";
}

/**
 * fio's arguments for `p` on one file, as a single job.
 *
 * @example
 * ```ts
 * import { fioArgs } from "./_fio.ts";
 * const args = fioArgs({
 *   rw: "read", bs: 1 << 20, size: 1 << 29, engine: "libaio", iodepth: 8,
 *   direct: true, runtimeS: 5, rampS: 1,
 * }, "/data/x/fio.dat");
 * console.assert(args.includes("--ioengine=libaio") && args.includes("--direct=1"));
 * ```
 */
export function fioArgs(p: Pattern, filename: string): string[] {
  return [
    "--name=tb",
    // The null engine opens no file (and makes none).
    ...(p.engine === "null" ? [] : [`--filename=${filename}`]),
    `--rw=${p.rw}`,
    `--bs=${p.bs}`,
    `--size=${p.size}`,
    `--runtime=${p.runtimeS}`,
    "--time_based",
    `--ramp_time=${p.rampS}`,
    `--ioengine=${p.engine}`,
    `--iodepth=${p.iodepth}`,
    `--direct=${p.direct ? 1 : 0}`,
    ...(p.registered ? ["--fixedbufs", "--registerfiles"] : []),
    ...(p.cpusAllowed === undefined ? [] : [`--cpus_allowed=${p.cpusAllowed}`]),
    "--numjobs=1",
    "--output-format=json",
  ];
}

/**
 * tierbench `run` arguments for `p` on `tier` (`file:DIR` or `memory:DIR`),
 * reading `filename` in place when given; the caller adds `--output` and
 * `--quiet`. The `null` engine is the null tier's own (`tier` is `null:`).
 *
 * @example
 * ```ts
 * import { tierbenchArgs } from "./_fio.ts";
 * const args = tierbenchArgs({
 *   rw: "randread", bs: 4096, size: 1 << 28, engine: "psync", iodepth: 1,
 *   direct: false, runtimeS: 5, rampS: 1,
 * }, "memory:/dev/shm/x");
 * console.assert(!args.includes("--direct") && args.includes("randread"));
 * ```
 */
export function tierbenchArgs(p: Pattern, tier: string, filename?: string): string[] {
  return [
    ...(filename === undefined ? [] : ["--filename", filename]),
    "--tier",
    tier,
    "--rw",
    p.rw,
    "--bs",
    String(p.bs),
    "--size",
    String(p.size),
    "--runtime",
    String(p.runtimeS),
    "--ramp",
    String(p.rampS),
    ...(p.engine === "null" ? [] : ["--engine", p.engine]),
    "--iodepth",
    String(p.iodepth),
    "--numjobs",
    "1",
    ...(p.direct ? ["--direct"] : []),
    ...(p.registered ? ["--fixedbufs", "--registerfiles"] : []),
    ...(p.cpusAllowed === undefined ? [] : ["--cpus-allowed", p.cpusAllowed]),
  ];
}

type Json = Record<string, unknown>;

function isObject(v: unknown): v is Json {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function num(o: Json, key: string, what: string): number {
  const v = o[key];
  if (typeof v !== "number" || !Number.isFinite(v)) {
    throw new ToolOutputError(`${what}: no number at "${key}"`);
  }
  return v;
}

/**
 * Reads fio's JSON output (stdout of `--output-format=json`): the figures of
 * `jobs[0]` in direction `dir`. fio may print notes before the JSON; they
 * are skipped.
 *
 * @throws {ToolOutputError} when there is no JSON, no job, or the job failed.
 *
 * @example
 * ```ts
 * import { parseFioJson } from "./_fio.ts";
 * const out = JSON.stringify({ jobs: [{ error: 0, usr_cpu: 1, sys_cpu: 2, job_runtime: 5000,
 *   read: { bw_bytes: 10, iops: 2, io_bytes: 50, runtime: 5000, total_ios: 10, lat_ns: { mean: 7 } } }] });
 * const f = parseFioJson("note: x\n" + out, "read");
 * console.assert(f.bw_bytes === 10 && f.cpu_per_io_ns.usr === 5e6); // 1 % of 5 s over 10 I/Os
 * ```
 */
export function parseFioJson(stdout: string, dir: "read" | "write"): Figures {
  const start = stdout.search(/^\{/m);
  if (start < 0) throw new ToolOutputError("fio printed no JSON");
  let doc: unknown;
  try {
    doc = JSON.parse(stdout.slice(start));
  } catch (e) {
    throw new ToolOutputError(`fio's JSON does not parse: ${(e as Error).message}`);
  }
  const job = isObject(doc) && Array.isArray(doc.jobs) ? doc.jobs[0] : undefined;
  if (!isObject(job)) throw new ToolOutputError("fio's JSON has no jobs[0]");
  const error = job.error;
  if (typeof error === "number" && error !== 0) {
    throw new ToolOutputError(`fio's job failed with error ${error}`);
  }
  const d = job[dir];
  if (!isObject(d)) throw new ToolOutputError(`fio's JSON has no jobs[0].${dir}`);
  const lat = isObject(d.lat_ns) ? d.lat_ns : {};
  const usr = num(job, "usr_cpu", "fio");
  const sys = num(job, "sys_cpu", "fio");
  // usr_cpu and sys_cpu are % of job_runtime (ms) over the job's I/Os in both directions.
  const cpuMs = num(job, "job_runtime", "fio") / 100;
  const ios = ["read", "write"].reduce((n, k) => {
    const x = job[k];
    return n + (isObject(x) && typeof x.total_ios === "number" ? x.total_ios : 0);
  }, 0);
  return {
    bw_bytes: num(d, "bw_bytes", "fio"),
    iops: num(d, "iops", "fio"),
    io_bytes: num(d, "io_bytes", "fio"),
    runtime_ms: num(d, "runtime", "fio"),
    lat_mean_ns: typeof lat.mean === "number" ? lat.mean : 0,
    usr_cpu: usr,
    sys_cpu: sys,
    cpu_per_io_ns: perIo(usr * cpuMs * 1e6, sys * cpuMs * 1e6, ios),
  };
}

/** CPU time per I/O from `usrNs` and `sysNs` over `ios` I/Os (0 when none). */
function perIo(usrNs: number, sysNs: number, ios: number): CpuPerIo {
  return ios > 0 ? { usr: usrNs / ios, sys: sysNs / ios } : { usr: 0, sys: 0 };
}

/** What a tierbench result document says about its one run. */
export interface TierbenchFigures extends Figures {
  peak_rss_bytes: number;
}

/**
 * Reads a tierbench result document (text of its `--output` file): the
 * figures of its one run in direction `dir`, and the process's peak RSS.
 *
 * @throws {ToolOutputError} when the document is not a finished, ok run.
 */
export function parseTierbenchJson(text: string, dir: "read" | "write"): TierbenchFigures {
  let doc: ResultDocument;
  try {
    doc = JSON.parse(text) as ResultDocument;
  } catch (e) {
    throw new ToolOutputError(`tierbench's result does not parse: ${(e as Error).message}`);
  }
  const run = doc.runs?.[0];
  if (!run) throw new ToolOutputError("tierbench's result has no run");
  if (run.status !== "ok") {
    throw new ToolOutputError(`tierbench's run ${run.status}: ${run.error ?? "no cause given"}`);
  }
  const d = run[dir];
  const jobs = run.cpu.jobs;
  if (jobs === undefined) throw new ToolOutputError("tierbench's result has no cpu.jobs");
  const ios = run.read.total_ios + run.write.total_ios;
  return {
    cpu_per_io_ns: perIo(jobs.usr_ns, jobs.sys_ns, ios),
    bw_bytes: d.bw_bytes,
    iops: d.iops,
    io_bytes: d.io_bytes,
    runtime_ms: d.runtime,
    lat_mean_ns: d.lat_ns.mean,
    usr_cpu: run.cpu.usr_pct,
    sys_cpu: run.cpu.sys_pct,
    peak_rss_bytes: doc.tool.peak_rss_bytes,
  };
}
