/**
 * One run measured by several processes at once, made into one: the
 * bandwidth summed over the window every process was measuring, IOR's
 * last-done and elbencho's first-done figures, latency from the merged HDR
 * histograms, and per-process and per-node shares. Pure: it reads the
 * processes' own results, nothing else.
 *
 * Times are ms after the barrier that released every process, so no clock
 * has to agree with another: each process says how long after the barrier
 * its measurement began.
 *
 * @module
 */

import {
  decodeLatency,
  encodeLatency,
  type LatencyHistograms,
  latencyStats,
  mergeLatency,
  newLatencyHistograms,
} from "../core/recorder.ts";
import type { ClusterDirection, ClusterRun, ClusterSpan } from "../schema/cluster.ts";
import type { DirectionResult, RunResult, TimeSeries } from "../schema/result.ts";
import { worstStatus } from "../schema/run_status.ts";
import { round3 } from "../core/stats.ts";

/** One process's result of one run. */
export interface ProcessRun {
  readonly rank: number;
  readonly node: string;
  /** When its measurement began, ms after the barrier. */
  readonly startMs: number;
  readonly run: RunResult;
}

type Dir = "read" | "write";

/**
 * The bytes (or I/Os) a process had moved by each moment of its measured
 * window: its time series read as a cumulative curve, ending at its totals.
 */
class Cumulative {
  readonly #t: number[] = [0];
  readonly #v: number[] = [0];

  constructor(series: TimeSeries, perSecond: number[], runtimeMs: number, total: number) {
    const iv = series.interval_ms / 1000;
    let sum = 0;
    for (const [k, t] of series.t_ms.entries()) {
      if (t >= runtimeMs) break;
      sum = Math.min(total, sum + (perSecond[k] ?? 0) * iv);
      this.#t.push(t);
      this.#v.push(sum);
    }
    this.#t.push(Math.max(runtimeMs, this.#t[this.#t.length - 1]!));
    this.#v.push(total);
  }

  /** Moved by `t` ms after the process's start (clamped to its window). */
  at(t: number): number {
    const ts = this.#t, vs = this.#v;
    if (t <= 0) return 0;
    if (t >= ts[ts.length - 1]!) return vs[vs.length - 1]!;
    let k = 1;
    while (ts[k]! < t) k++;
    const t0 = ts[k - 1]!, t1 = ts[k]!;
    const v0 = vs[k - 1]!, v1 = vs[k]!;
    return t1 === t0 ? v1 : v0 + (v1 - v0) * (t - t0) / (t1 - t0);
  }
}

/** A process's measured window, ms after the barrier. */
function windowOf(p: ProcessRun): { start: number; end: number } {
  return { start: p.startMs, end: p.startMs + p.run.read.runtime };
}

function curves(p: ProcessRun, dir: Dir): { bytes: Cumulative; ios: Cumulative } {
  const d = p.run[dir];
  const ts = p.run.timeseries;
  return {
    bytes: new Cumulative(ts, ts[`${dir}_bw_bytes`], d.runtime, d.io_bytes),
    ios: new Cumulative(ts, ts[`${dir}_iops`], d.runtime, d.total_ios),
  };
}

function span(runtimeMs: number, bytes: number): ClusterSpan {
  return {
    runtime: Math.round(runtimeMs),
    io_bytes: Math.round(bytes),
    bw_bytes: runtimeMs > 0 ? Math.round(bytes / (runtimeMs / 1000)) : 0,
  };
}

/**
 * The common window: from the latest start to the earliest end, ms after
 * the barrier; `end` equals `start` when the windows do not overlap.
 *
 * @example
 * ```ts
 * import { commonWindow } from "./cluster_aggregate.ts";
 * const w = commonWindow([{ start: 1000, end: 6000 }, { start: 1002, end: 5990 }]);
 * console.assert(w.start === 1002 && w.end === 5990);
 * ```
 */
export function commonWindow(
  windows: readonly { start: number; end: number }[],
): { start: number; end: number } {
  const start = Math.max(...windows.map((w) => w.start));
  const end = Math.min(...windows.map((w) => w.end));
  return { start, end: Math.max(start, end) };
}

function mergedHistograms(parts: readonly ProcessRun[], dir: Dir): LatencyHistograms {
  const into = newLatencyHistograms();
  for (const p of parts) mergeLatency(into, decodeLatency(p.run[dir].hist!));
  return into;
}

/** The aggregate of one direction, and each process's bytes in the common window. */
function direction(
  parts: readonly ProcessRun[],
  dir: Dir,
  common: { start: number; end: number },
): { figures: ClusterDirection; result: DirectionResult; perProcess: number[] } {
  const windows = parts.map(windowOf);
  const first = Math.min(...windows.map((w) => w.start));
  const firstEnd = Math.min(...windows.map((w) => w.end));
  const lastEnd = Math.max(...windows.map((w) => w.end));
  const commonMs = common.end - common.start;
  let commonBytes = 0, commonIos = 0, firstBytes = 0, firstIos = 0, bytes = 0, ios = 0;
  const perProcess: number[] = [];
  for (const [i, p] of parts.entries()) {
    const c = curves(p, dir);
    const s = windows[i]!.start;
    const mine = c.bytes.at(common.end - s) - c.bytes.at(common.start - s);
    perProcess.push(commonMs > 0 ? Math.round(mine / (commonMs / 1000)) : 0);
    commonBytes += mine;
    commonIos += c.ios.at(common.end - s) - c.ios.at(common.start - s);
    firstBytes += c.bytes.at(firstEnd - s);
    firstIos += c.ios.at(firstEnd - s);
    bytes += p.run[dir].io_bytes;
    ios += p.run[dir].total_ios;
  }
  const h = mergedHistograms(parts, dir);
  const lastDone = span(lastEnd - first, bytes);
  const firstDone = span(firstEnd - first, firstBytes);
  const commonSpan = span(commonMs, commonBytes);
  const figures: ClusterDirection = {
    io_bytes: bytes,
    common_bw_bytes: perProcess.reduce((a, b) => a + b, 0),
    common_io_bytes: Math.round(commonBytes),
    last_done: lastDone,
    first_done: firstDone,
    lat_ns: latencyStats(h.lat),
    clat_ns: latencyStats(h.clat),
  };
  const iops = (n: number, ms: number) => ms > 0 ? n / (ms / 1000) : 0;
  const result: DirectionResult = {
    io_bytes: bytes,
    bw_bytes: figures.common_bw_bytes,
    iops: iops(commonIos, commonMs),
    runtime: commonSpan.runtime,
    total_ios: ios,
    lat_ns: latencyStats(h.lat),
    clat_ns: latencyStats(h.clat),
    slat_ns: latencyStats(h.slat),
    first_done: { ...firstDone, iops: iops(firstIos, firstDone.runtime) },
    last_done: { ...lastDone, iops: iops(ios, lastDone.runtime) },
    ...(h.ttfb.totalCount > 0 ? { ttfb_ns: latencyStats(h.ttfb) } : {}),
    hist: encodeLatency(h),
  };
  return { figures, result, perProcess };
}

/** The processes' time series added interval by interval (they start together). */
function summedSeries(parts: readonly ProcessRun[]): TimeSeries {
  const base = parts[0]!.run.timeseries;
  const n = Math.min(...parts.map((p) => p.run.timeseries.t_ms.length));
  const sum = (key: "read_bw_bytes" | "write_bw_bytes" | "read_iops" | "write_iops") =>
    Array.from({ length: n }, (_, k) => parts.reduce((a, p) => a + p.run.timeseries[key][k]!, 0));
  return {
    interval_ms: base.interval_ms,
    t_ms: base.t_ms.slice(0, n),
    read_bw_bytes: sum("read_bw_bytes"),
    write_bw_bytes: sum("write_bw_bytes"),
    read_iops: sum("read_iops"),
    write_iops: sum("write_iops"),
  };
}

/** The worst status of the processes: failed over interrupted over ok. */

/**
 * Aggregates one run over the processes that measured it. `run` is a
 * result like a single process's (so tables, reports and profiles read it
 * unchanged): `bw_bytes` and `runtime` are the common window's, the
 * histograms are merged, the jobs listed for every process. `section` says
 * the same with every figure's rule, per process and per node.
 *
 * @example
 * ```ts ignore
 * const { run, section } = aggregateRun(parts);
 * console.log(section.read.common_bw_bytes === section.per_process.reduce((a, p) => a + p.read_bw_bytes, 0));
 * ```
 */
export function aggregateRun(
  parts: readonly ProcessRun[],
): { run: RunResult; section: ClusterRun } {
  if (parts.length === 0) throw new RangeError("aggregateRun: no process results");
  const sorted = [...parts].sort((a, b) => a.rank - b.rank);
  const common = commonWindow(sorted.map(windowOf));
  const read = direction(sorted, "read", common);
  const write = direction(sorted, "write", common);
  const perProcess = sorted.map((p, i) => ({
    rank: p.rank,
    node: p.node,
    read_bw_bytes: read.perProcess[i]!,
    write_bw_bytes: write.perProcess[i]!,
  }));
  const nodes = new Map<string, ClusterRun["per_node"][number]>();
  for (const [i, p] of sorted.entries()) {
    const n = nodes.get(p.node) ??
      { node: p.node, processes: 0, read_bw_bytes: 0, write_bw_bytes: 0 };
    n.processes++;
    n.read_bw_bytes += read.perProcess[i]!;
    n.write_bw_bytes += write.perProcess[i]!;
    nodes.set(p.node, n);
  }
  const first = sorted[0]!.run;
  const status = worstStatus(sorted.map((p) => p.run.status));
  const failed = sorted.find((p) => p.run.error !== undefined);
  const numjobs = first.options.numjobs;
  const run: RunResult = {
    ...first,
    status,
    read: read.result,
    write: write.result,
    timeseries: summedSeries(sorted),
    cpu: {
      usr_pct: sorted.reduce((a, p) => a + p.run.cpu.usr_pct, 0),
      sys_pct: sorted.reduce((a, p) => a + p.run.cpu.sys_pct, 0),
      jobs: {
        usr_ns: sorted.reduce((a, p) => a + (p.run.cpu.jobs?.usr_ns ?? 0), 0),
        sys_ns: sorted.reduce((a, p) => a + (p.run.cpu.jobs?.sys_ns ?? 0), 0),
      },
    },
    jobs: sorted.flatMap((p, i) => p.run.jobs.map((j) => ({ ...j, job: i * numjobs + j.job }))),
  };
  delete run.error;
  if (failed) run.error = `rank ${failed.rank} on ${failed.node}: ${failed.run.error}`;
  const section: ClusterRun = {
    name: first.name,
    window: { start_ms: round3(common.start), end_ms: round3(common.end) },
    read: read.figures,
    write: write.figures,
    per_process: perProcess,
    per_node: [...nodes.values()],
  };
  return { run, section };
}
