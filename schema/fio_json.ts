/**
 * A result document in fio's own JSON layout (`--output-format fio-json`,
 * `json+`): what `fio --output-format=json` (`json+`) prints, built from the
 * runs of a {@linkcode ResultDocument}, so that scripts written for fio's
 * JSON read tierbench's unchanged. Each run is one entry of `jobs[]` (its
 * numjobs reported together, as fio's `group_reporting` does); a run across
 * processes is written in fio's client/server layout (`client_stats[]`, see
 * {@linkcode toFioJson}).
 *
 * What fio measures and tierbench does not is written as fio writes an
 * unmeasured figure (zero): `trim`, `sync`, `ctx`, `majf`, `minf`,
 * `disk_util` (empty). `iodepth_level`, `iodepth_submit` and
 * `iodepth_complete` put 100 % at the configured iodepth's bucket (tierbench
 * keeps that depth in flight; it does not count per-submit depths). The json+
 * `bins` come from the HDR histograms: one bin per HDR bucket, keyed by the
 * bucket's highest value in ns (fio keys its own, coarser, ~0.8 % wide bins
 * the same way). docs/results.md describes the layout.
 *
 * @module
 */

import {
  decodeHistogram,
  type Histogram,
  type LatencyStats,
  recordedValues,
} from "../core/recorder.ts";
import type { DirectionResult, ResultDocument, RunResult } from "./result.ts";

/** The formats `--output-format` writes. */
export const OUTPUT_FORMATS = ["normal", "json", "fio-json", "json+"] as const;
/** One of {@linkcode OUTPUT_FORMATS}. */
export type OutputFormat = typeof OUTPUT_FORMATS[number];

/** How the runs came to be: from a job file, the options as the file gave them. */
export interface FioJobSource {
  /** The `[global]` section's options as written. */
  readonly global: Record<string, string>;
  /** Per run, in the document's order: its section's options and its group (stonewall). */
  readonly jobs: readonly { readonly options: Record<string, string>; readonly groupid: number }[];
}

/** fio's latency block, with `percentile` on clat only and json+'s `bins`. */
export interface FioLatency {
  min: number;
  max: number;
  mean: number;
  stddev: number;
  N: number;
  percentile?: Record<string, number>;
  bins?: Record<string, number>;
}

/** One direction of one fio job. */
export interface FioDirection {
  io_bytes: number;
  io_kbytes: number;
  bw_bytes: number;
  /** KiB/s. */
  bw: number;
  iops: number;
  /** ms. */
  runtime: number;
  total_ios: number;
  short_ios: number;
  drop_ios: number;
  slat_ns: FioLatency;
  clat_ns: FioLatency;
  lat_ns: FioLatency;
  bw_min: number;
  bw_max: number;
  bw_agg: number;
  bw_mean: number;
  bw_dev: number;
  bw_samples: number;
  iops_min: number;
  iops_max: number;
  iops_mean: number;
  iops_stddev: number;
  iops_samples: number;
}

/** One entry of fio's `jobs[]`. */
export type FioJob = Record<string, unknown> & {
  jobname: string;
  groupid: number;
  error: number;
  "job options": Record<string, string>;
  read: FioDirection;
  write: FioDirection;
  trim: FioDirection;
};

/** fio's whole document. */
export interface FioDocument {
  "fio version": string;
  timestamp: number;
  timestamp_ms: number;
  time: string;
  "global options": Record<string, string>;
  /** Every job (a run in one process). */
  jobs?: FioJob[];
  /**
   * fio's client/server layout (a run across processes): each process's
   * jobs with its `hostname` and `port`, then "All clients".
   */
  client_stats?: (FioJob & { hostname: string; port: number; rank?: number })[];
  disk_util: unknown[];
}

const DAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/** C's ctime() without its newline, as fio's `time`: "Tue Nov 24 03:59:25 2026". */
function ctime(d: Date): string {
  const two = (n: number) => String(n).padStart(2, "0");
  return `${DAYS[d.getDay()]} ${MONTHS[d.getMonth()]} ${String(d.getDate()).padStart(2)} ` +
    `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())} ${d.getFullYear()}`;
}

function latency(s: LatencyStats, h: Histogram | undefined, percentiles: boolean, plus: boolean) {
  const out: FioLatency = { min: s.min, max: s.max, mean: s.mean, stddev: s.stddev, N: s.N };
  if (percentiles && s.N > 0) out.percentile = s.percentile;
  if (plus && percentiles && s.N > 0 && h) {
    out.bins = Object.fromEntries(recordedValues(h).map(([v, c]) => [String(v), c]));
  }
  return out;
}

/** min, max, mean and sample standard deviation, zeros for no samples (fio's). */
function sampleStats(xs: readonly number[]) {
  if (xs.length === 0) return { min: 0, max: 0, mean: 0, dev: 0, n: 0 };
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  const varSum = xs.reduce((a, x) => a + (x - mean) ** 2, 0);
  const dev = xs.length > 1 ? Math.sqrt(varSum / (xs.length - 1)) : 0;
  return { min: Math.min(...xs), max: Math.max(...xs), mean, dev, n: xs.length };
}

function emptyDirection(): FioDirection {
  const zero = { min: 0, max: 0, mean: 0, stddev: 0, N: 0 };
  return {
    io_bytes: 0,
    io_kbytes: 0,
    bw_bytes: 0,
    bw: 0,
    iops: 0,
    runtime: 0,
    total_ios: 0,
    short_ios: 0,
    drop_ios: 0,
    slat_ns: { ...zero },
    clat_ns: { ...zero },
    lat_ns: { ...zero },
    bw_min: 0,
    bw_max: 0,
    bw_agg: 0,
    bw_mean: 0,
    bw_dev: 0,
    bw_samples: 0,
    iops_min: 0,
    iops_max: 0,
    iops_mean: 0,
    iops_stddev: 0,
    iops_samples: 0,
  };
}

function direction(
  d: DirectionResult,
  bwSeries: readonly number[],
  iopsSeries: readonly number[],
  groupBw: number,
  plus: boolean,
): FioDirection {
  if (d.total_ios === 0) return emptyDirection();
  const bw = sampleStats(bwSeries.map((b) => b / 1024));
  const iops = sampleStats(iopsSeries);
  // a document written before histograms were kept has none: no bins then
  const clat = plus && d.hist ? decodeHistogram(d.hist.clat) : undefined;
  return {
    io_bytes: d.io_bytes,
    io_kbytes: Math.floor(d.io_bytes / 1024),
    bw_bytes: Math.round(d.bw_bytes),
    bw: Math.floor(d.bw_bytes / 1024),
    iops: d.iops,
    runtime: Math.round(d.runtime),
    total_ios: d.total_ios,
    short_ios: 0,
    drop_ios: 0,
    slat_ns: latency(d.slat_ns, undefined, false, false),
    clat_ns: latency(d.clat_ns, clat, true, plus),
    lat_ns: latency(d.lat_ns, undefined, false, false),
    bw_min: Math.floor(bw.min),
    bw_max: Math.floor(bw.max),
    bw_agg: groupBw > 0 ? (d.bw_bytes / groupBw) * 100 : 0,
    bw_mean: bw.mean,
    bw_dev: bw.dev,
    bw_samples: bw.n,
    iops_min: Math.floor(iops.min),
    iops_max: Math.floor(iops.max),
    iops_mean: iops.mean,
    iops_stddev: iops.dev,
    iops_samples: iops.n,
  };
}

/** fio's latency_ns/us/ms edges: a key is its bucket's exclusive upper bound in that unit. */
const EDGES = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000];

/** fio's `latency_ns`, `latency_us` and `latency_ms`: the % of completions in each bucket. */
function latencyBuckets(hists: readonly Histogram[]) {
  const ns = new Array<number>(EDGES.length).fill(0);
  const us = new Array<number>(EDGES.length).fill(0);
  const ms = new Array<number>(EDGES.length + 2).fill(0);
  let total = 0;
  const put = (into: number[], v: number, count: number) => {
    const i = EDGES.findIndex((e) => v < e);
    into[i]! += count;
  };
  for (const h of hists) {
    for (const [v, count] of recordedValues(h)) {
      total += count;
      if (v < 1000) put(ns, v, count);
      else if (v < 1_000_000) put(us, Math.floor(v / 1000), count);
      else {
        const m = Math.floor(v / 1_000_000);
        if (m < 1000) put(ms, m, count);
        else ms[m < 2000 ? EDGES.length : EDGES.length + 1]! += count;
      }
    }
  }
  const pct = (c: number) => total > 0 ? (c / total) * 100 : 0;
  const keyed = (counts: number[], keys: string[]) =>
    Object.fromEntries(keys.map((k, i) => [k, pct(counts[i]!)]));
  const keys = EDGES.map(String);
  return {
    latency_ns: keyed(ns, keys),
    latency_us: keyed(us, keys),
    latency_ms: keyed(ms, [...keys, "2000", ">=2000"]),
  };
}

/** fio's depth-distribution keys with 100 % at `depth`'s bucket. */
function depthBuckets(depth: number, keys: readonly string[], bucket: (d: number) => string) {
  const b = bucket(depth);
  return Object.fromEntries(keys.map((k) => [k, k === b ? 100 : 0]));
}

const LEVEL_KEYS = ["1", "2", "4", "8", "16", "32", ">=64"];
const SUBMIT_KEYS = ["0", "4", "8", "16", "32", "64", ">=64"];

function levelBucket(d: number): string {
  if (d >= 64) return ">=64";
  return String(2 ** Math.floor(Math.log2(d)));
}

function submitBucket(d: number): string {
  if (d > 64) return ">=64";
  return SUBMIT_KEYS.find((k) => k !== "0" && d <= Number(k)) ?? ">=64";
}

/** A run's options under fio's names, as fio's `job options` prints them (strings). */
export function fioJobOptions(run: RunResult): Record<string, string> {
  const o = run.options;
  const tierPath = o.tier.includes(":") ? o.tier.slice(o.tier.indexOf(":") + 1) : "";
  const out: Record<string, string> = {
    name: run.name,
    rw: o.rw,
    bs: String(o.bs),
    size: String(o.size),
    iodepth: String(o.iodepth),
    numjobs: String(o.numjobs),
    direct: o.direct ? "1" : "0",
    ioengine: o.engine,
    randseed: String(o.seed),
    log_avg_msec: String(o.log_avg_msec),
  };
  if (o.io_size !== o.size) out.io_size = String(o.io_size);
  if (o.rw === "randrw") out.rwmixread = String(o.rwmixread);
  if (o.time_based && o.runtime_ms !== null) {
    out.time_based = "1";
    out.runtime = `${o.runtime_ms}ms`;
  }
  if (o.ramp_ms > 0) out.ramp_time = `${o.ramp_ms}ms`;
  if (o.filename) out.filename = o.filename;
  else if (tierPath && !o.tier.startsWith("s3:")) out.directory = tierPath;
  if (o.end_fsync) out.end_fsync = "1";
  if (o.nrfiles > 1) out.nrfiles = String(o.nrfiles);
  if (o.rate?.bytes_per_s != null) out.rate = String(o.rate.bytes_per_s);
  if (o.rate?.iops != null) out.rate_iops = String(o.rate.iops);
  if (o.rate) out.rate_process = o.rate.process;
  return out;
}

/** One run as an entry of fio's `jobs[]` (or `client_stats[]`). */
function fioJob(
  run: RunResult,
  o: {
    readonly groupid: number;
    readonly options: Record<string, string>;
    readonly plus: boolean;
    /** The bandwidth of the run's group per direction, for `bw_agg`. */
    readonly groupBw: { readonly read: number; readonly write: number };
  },
): FioJob {
  const ts = run.timeseries;
  const hists = [run.read, run.write].flatMap((d) =>
    d.total_ios > 0 && d.hist ? [decodeHistogram(d.hist.clat)] : []
  );
  const seconds = (run.ramp.ms + Math.max(run.read.runtime, run.write.runtime)) / 1000;
  return {
    jobname: run.name,
    groupid: o.groupid,
    error: run.status === "ok" ? 0 : 1,
    eta: 0,
    elapsed: Math.max(1, Math.round(seconds)),
    "job options": o.options,
    read: direction(run.read, ts.read_bw_bytes, ts.read_iops, o.groupBw.read, o.plus),
    write: direction(run.write, ts.write_bw_bytes, ts.write_iops, o.groupBw.write, o.plus),
    trim: emptyDirection(),
    sync: { total_ios: 0, lat_ns: { min: 0, max: 0, mean: 0, stddev: 0, N: 0 } },
    job_runtime: Math.round(Math.max(run.read.runtime, run.write.runtime)),
    usr_cpu: run.cpu.usr_pct,
    sys_cpu: run.cpu.sys_pct,
    ctx: 0,
    majf: 0,
    minf: 0,
    iodepth_level: depthBuckets(run.options.iodepth, LEVEL_KEYS, levelBucket),
    iodepth_submit: depthBuckets(run.options.iodepth, SUBMIT_KEYS, submitBucket),
    iodepth_complete: depthBuckets(run.options.iodepth, SUBMIT_KEYS, submitBucket),
    ...latencyBuckets(hists),
    ...(run.io_errors
      ? {
        total_err: run.io_errors.read + run.io_errors.write,
        first_error: run.io_errors.first_errno,
      }
      : {}),
    latency_depth: run.options.iodepth,
    latency_target: 0,
    latency_percentile: 100,
    latency_window: 0,
  };
}

/** Options of {@linkcode toFioJson}. */
export interface FioJsonOptions {
  /** json+: each measured `clat_ns` with its `bins`. */
  readonly plus?: boolean;
  /** The job file the runs came from: its options and groups. */
  readonly source?: FioJobSource;
  /**
   * Each run's `groupid` where no job file gives it (the members of a
   * contention group share one); default: each run its own group.
   */
  readonly groups?: readonly number[];
}

/**
 * The document's runs in fio's JSON layout; with `plus`, json+ (each
 * measured `clat_ns` with its `bins`). `source` gives the job file's options
 * and groups when the runs came from one; otherwise each run is its own
 * group (or `groups[i]`) with its options under fio's names.
 *
 * A document of a run across processes (with `cluster`) is written as fio's
 * client/server mode writes one (`fio --client`): no `jobs`, but
 * `client_stats`, each process's own runs with its `hostname` (the node)
 * and `port` (0: there is no fio server; `rank` names the process), then,
 * per run, the aggregate over every process as the entry fio sums its
 * clients into, named "All clients".
 *
 * @example
 * ```ts
 * import { parseJobOptions } from "../core/config.ts";
 * import { runSession } from "../bench/session.ts";
 * import { toFioJson } from "./fio_json.ts";
 * const { doc } = await runSession([parseJobOptions({ tier: "null:", size: "1m" })], {
 *   kind: "run",
 *   config: {},
 * });
 * const fio = toFioJson(doc, { plus: true });
 * console.assert(fio.jobs![0]!.read.io_kbytes === 1024);
 * console.assert(fio.jobs![0]!.read.clat_ns.bins !== undefined);
 * ```
 */
export function toFioJson(doc: ResultDocument, o: FioJsonOptions = {}): FioDocument {
  const plus = o.plus ?? false;
  const finished = new Date(doc.finished || doc.started);
  const groupOf = (i: number) => o.source?.jobs[i]?.groupid ?? o.groups?.[i] ?? i;
  const optionsOf = (run: RunResult, i: number) => o.source?.jobs[i]?.options ?? fioJobOptions(run);
  /** The bandwidth of run `i`'s group, over `runs` (each run's own, or every process's). */
  const groupBw = (i: number, runs: readonly (readonly [number, RunResult])[]) => {
    const sum = (dir: "read" | "write") =>
      runs.reduce((a, [k, r]) => a + (groupOf(k) === groupOf(i) ? r[dir].bw_bytes : 0), 0);
    return { read: sum("read"), write: sum("write") };
  };
  const head = {
    "fio version": `tierbench-${doc.tool.version}`,
    timestamp: Math.floor(finished.getTime() / 1000),
    timestamp_ms: finished.getTime(),
    time: ctime(finished),
    "global options": o.source?.global ?? {},
  };
  const cluster = doc.cluster;
  if (cluster) {
    const perProcess = cluster.processes.flatMap((p) => p.runs.map((r, k) => [k, r] as const));
    const clientStats = doc.runs.flatMap((agg, i) => [
      ...cluster.processes.flatMap((p) => {
        const run = p.runs[i];
        if (!run) return [];
        const job = fioJob(run, {
          groupid: groupOf(i),
          options: optionsOf(agg, i),
          plus,
          groupBw: groupBw(i, perProcess),
        });
        return [{ ...job, hostname: p.node, port: 0, rank: p.rank }];
      }),
      {
        ...fioJob(agg, {
          groupid: groupOf(i),
          options: optionsOf(agg, i),
          plus,
          groupBw: groupBw(i, doc.runs.map((r, k) => [k, r] as const)),
        }),
        jobname: "All clients",
        hostname: "",
        port: 0,
      },
    ]);
    return { ...head, client_stats: clientStats, disk_util: [] };
  }
  const all = doc.runs.map((r, k) => [k, r] as const);
  const jobs = doc.runs.map((run, i) =>
    fioJob(run, { groupid: groupOf(i), options: optionsOf(run, i), plus, groupBw: groupBw(i, all) })
  );
  return { ...head, jobs, disk_util: [] };
}
