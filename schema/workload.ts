/**
 * The `workload` section of a result document, built from the ranks'
 * reports: per iteration, phase, path and rank; and a `summary` with the
 * medians over the measured iterations of what training feels — iteration
 * time, update-phase time, stall time, checkpoint flush time — and the bytes
 * moved per path per iteration.
 *
 * Node-level figures take the slowest rank (training waits for it): a
 * phase's time runs from the earliest rank's start to the latest rank's end;
 * stall is the largest over ranks.
 *
 * @module
 */

import { median } from "../core/stats.ts";
import type { TierFacts } from "../tiers/types.ts";
import type { PathPolicy, WorkloadProgram } from "../workloads/ops.ts";
import { round3 } from "../core/stats.ts";
import type { StreamScheduleSummary } from "../core/rate.ts";

/** Per-path I/O of a phase of one rank. */
export interface RankIo {
  bytes: number;
  ops: number;
  /** Sum of op durations, from getting the path to completion, ms. */
  busy_ms: number;
  /** Time ops waited for a node-wide slot on the path, ms. */
  slot_wait_ms: number;
}

/** One phase of one iteration of one rank. */
export interface RankPhase {
  iteration: number;
  phase: string;
  /** CLOCK_MONOTONIC ms: when the phase's barrier released (or its first op started). */
  start: number;
  /** When its last op that holds the phase open finished. */
  end: number;
  /** True when every op of the phase runs in the background. */
  background: boolean;
  /** Time the compute stream waited for data or buffers, ms. */
  stall_ms: number;
  /** Time spent at barriers (waiting for own I/O to drain and for other ranks), ms. */
  barrier_ms: number;
  /** Keyed `path:read`, `path:write`, `path:hit`. */
  io: Record<string, RankIo>;
}

/** One op's span, for the timeline. */
export type TimelineSpan = [
  stream: string,
  kind: string,
  label: string,
  bytes: number,
  start: number,
  end: number,
];

/**
 * How one rank's background stream to one path kept to `--background-rate`:
 * its requests went on an open-loop schedule at that rate (core/rate.ts).
 */
export interface BackgroundSchedule extends StreamScheduleSummary {
  rank: number;
  /** The path's name (`remote`, `local`, …). */
  path: string;
  /** The path's request size over the rate: the time between intended starts, ms. */
  interval_ms: number;
  /** Whether every op ended within an interval and 10 ms of its schedule (end_lag_ms). */
  met: boolean;
}

/** What a rank sends back. */
export interface RankReport {
  rank: number;
  phases: RankPhase[];
  timeline: TimelineSpan[];
  /** CLOCK_MONOTONIC ms when the layout finished and the program started. */
  started: number;
  /** Under --background-rate: each path's background stream. */
  background?: BackgroundSchedule[];
  /** Under --verify: bytes read back and checked against what the rank wrote. */
  verified_bytes?: number;
}

/** `--background-rate`: the rate of each rank's background stream, and how each kept to it. */
export interface BackgroundRateResult {
  /** Bytes per second per rank and path. */
  bytes_per_s: number;
  /** Whether every rank's stream to every path kept to it. */
  met: boolean;
  /** Per rank and path (ranks numbered across nodes in a run across processes). */
  schedules: BackgroundSchedule[];
}

/** A path as the results describe it. */
export interface WorkloadPathResult extends PathPolicy {
  direct: boolean;
  /** The rank streams' engine on a file-backed path (`--engine`: libaio or io_uring); absent for s3. */
  engine?: string;
  tier: TierFacts;
  /** Most ranks that were reading / writing the path at the same moment (checks the limits). */
  peak_readers?: number;
  peak_writers?: number;
}

/** A path's I/O in a phase, over all ranks. */
export interface PathIoResult {
  bytes: number;
  ops: number;
  /** bytes over the phase's time. */
  bw_bytes: number;
  /** Sum over ranks of the time ops held the path, s. */
  busy_s: number;
  /** Sum over ranks of the time ops waited for a node-wide slot, s. */
  slot_wait_s: number;
}

/** One phase of one iteration, node-level. */
export interface PhaseResult {
  time_s: number;
  /** Largest over ranks of the time compute waited for data or buffers. */
  stall_s: number;
  background: boolean;
  /** Keyed `path:read`, `path:write`, `path:hit`. */
  io: Record<string, PathIoResult>;
}

/** One iteration, node-level. */
export interface IterationResult {
  iteration: number;
  warmup: boolean;
  /** From the first rank entering the iteration to the last op that holds it open. */
  iteration_s: number;
  /** Largest over ranks of the iteration's total stall. */
  stall_s: number;
  phases: Record<string, PhaseResult>;
}

/** Medians over the measured iterations. */
export interface WorkloadSummary {
  iterations: number;
  iteration_s: number;
  /** Optimizer workloads: the update phase. */
  update_s?: number;
  /** Compute waiting for I/O, per iteration (largest rank). */
  stall_s: number;
  /** Checkpoint workloads: the background flush. */
  flush_s?: number;
  /** Bytes per iteration over all ranks, keyed `path:read` / `path:write` / `path:hit`. */
  bytes: Record<string, number>;
}

/**
 * The summary of `measured` iterations (none a warm-up, at least one): the
 * median iteration, stall, update and flush times (the last two where a
 * phase of that name ran), with `bytes` as given.
 *
 * @example
 * ```ts
 * import { summaryOf } from "./workload.ts";
 * const it = (iteration: number, s: number) => ({
 *   iteration,
 *   warmup: false,
 *   iteration_s: s,
 *   stall_s: 0,
 *   phases: { update: { time_s: s / 2, stall_s: 0, background: false, io: {} } },
 * });
 * const summary = summaryOf([it(0, 1), it(1, 3), it(2, 2)], { "local:read": 8 });
 * console.assert(summary.iteration_s === 2 && summary.update_s === 1);
 * console.assert(summary.flush_s === undefined && summary.bytes["local:read"] === 8);
 * ```
 */
export function summaryOf(
  measured: readonly IterationResult[],
  bytes: Record<string, number>,
): WorkloadSummary {
  const phaseMedian = (name: string) => {
    const xs = measured.flatMap((it) => (it.phases[name] ? [it.phases[name].time_s] : []));
    return xs.length > 0 ? median(xs) : undefined;
  };
  const update = phaseMedian("update");
  const flush = phaseMedian("flush");
  return {
    iterations: measured.length,
    iteration_s: median(measured.map((it) => it.iteration_s)),
    ...(update !== undefined ? { update_s: update } : {}),
    stall_s: median(measured.map((it) => it.stall_s)),
    ...(flush !== undefined ? { flush_s: flush } : {}),
    bytes,
  };
}

/** The workload section of a result document. */
export interface WorkloadResult {
  name: string;
  setup: Record<string, number | string>;
  options: Record<string, number>;
  derived: Record<string, number | string | boolean>;
  notes: string[];
  paths: WorkloadPathResult[];
  summary: WorkloadSummary | null;
  iterations: IterationResult[];
  /** Per rank, per iteration and phase. */
  ranks: { rank: number; phases: RankPhaseResult[] }[];
  /** Under --background-rate: the rate and, per rank and path, whether it was kept. */
  background_rate?: BackgroundRateResult;
  /**
   * Under --verify: every object read back was checked, byte for byte,
   * against the write that last covered it (engines/stream_verify.ts);
   * `checked_bytes` over all ranks, the same as the bytes read.
   */
  verify?: { checked_bytes: number };
  /** Every op of one measured iteration (the last), ms from that iteration's start. */
  timeline: {
    iteration: number;
    columns: ["rank", "stream", "kind", "label", "bytes", "start_ms", "end_ms"];
    spans: [number, string, string, string, number, number, number][];
  };
}

/** A rank's phase with times relative to the run's start, s. */
export interface RankPhaseResult {
  iteration: number;
  phase: string;
  start_s: number;
  time_s: number;
  stall_s: number;
  barrier_s: number;
  io: Record<string, RankIo>;
}

/** Builds the node-level figures from the ranks' reports. */
export function aggregate(
  program: WorkloadProgram,
  reports: readonly RankReport[],
  timelineIteration: number,
): Pick<WorkloadResult, "summary" | "iterations" | "ranks" | "timeline"> {
  const iterations = phasesByIteration(reports).map(([iteration, list]) =>
    iterationResult(program, reports, iteration, list)
  );
  return {
    summary: measuredSummary(iterations.filter((it) => !it.warmup)),
    iterations,
    ranks: rankResults(reports),
    timeline: {
      iteration: timelineIteration,
      columns: ["rank", "stream", "kind", "label", "bytes", "start_ms", "end_ms"],
      spans: timelineSpans(reports, timelineIteration),
    },
  };
}

/** Every rank's phases grouped by iteration, in iteration order (ranks in report order within one). */
function phasesByIteration(reports: readonly RankReport[]): [number, RankPhase[]][] {
  const byIteration = new Map<number, RankPhase[]>();
  for (const r of reports) {
    for (const ph of r.phases) {
      let l = byIteration.get(ph.iteration);
      if (!l) byIteration.set(ph.iteration, l = []);
      l.push(ph);
    }
  }
  return [...byIteration.entries()].sort((a, b) => a[0] - b[0]);
}

/** One iteration over all ranks: each phase from its first start to its last end, the slowest rank's stall. */
function iterationResult(
  program: WorkloadProgram,
  reports: readonly RankReport[],
  iteration: number,
  list: readonly RankPhase[],
): IterationResult {
  const names = [...new Set(list.map((p) => p.phase))];
  const phases: Record<string, PhaseResult> = {};
  for (const name of names) phases[name] = phaseResult(list.filter((p) => p.phase === name));
  // the final drain (waiting for a lazy flush to land) is not part of training's iteration
  const held = list.filter((p) => !p.background && p.phase !== "drain");
  const stallPerRank = reports.map((r) =>
    r.phases.filter((p) => p.iteration === iteration).reduce((t, p) => t + p.stall_ms, 0)
  );
  return {
    iteration,
    warmup: iteration < program.warmupIterations,
    iteration_s: held.length === 0
      ? 0
      : (Math.max(...held.map((p) => p.end)) - Math.min(...held.map((p) => p.start))) / 1000,
    stall_s: Math.max(...stallPerRank) / 1000,
    phases,
  };
}

/** One phase of one iteration over the ranks that ran it: its span, I/O summed per path, the longest stall. */
function phaseResult(of: readonly RankPhase[]): PhaseResult {
  const time = (Math.max(...of.map((p) => p.end)) - Math.min(...of.map((p) => p.start))) / 1000;
  const io: Record<string, PathIoResult> = {};
  for (const p of of) {
    for (const [k, v] of Object.entries(p.io)) {
      const t = io[k] ??= { bytes: 0, ops: 0, bw_bytes: 0, busy_s: 0, slot_wait_s: 0 };
      t.bytes += v.bytes;
      t.ops += v.ops;
      t.busy_s += v.busy_ms / 1000;
      t.slot_wait_s += v.slot_wait_ms / 1000;
    }
  }
  for (const t of Object.values(io)) t.bw_bytes = time > 0 ? t.bytes / time : 0;
  return {
    time_s: time,
    stall_s: Math.max(...of.map((p) => p.stall_ms)) / 1000,
    background: of.every((p) => p.background),
    io,
  };
}

/** The medians over the measured iterations, with each path's bytes per iteration; null when none. */
function measuredSummary(measured: readonly IterationResult[]): WorkloadSummary | null {
  if (measured.length === 0) return null;
  const keys = [
    ...new Set(
      measured.flatMap((it) => Object.values(it.phases).flatMap((p) => Object.keys(p.io))),
    ),
  ];
  const bytes: Record<string, number> = {};
  for (const k of keys.sort()) {
    bytes[k] = median(
      measured.map((it) => Object.values(it.phases).reduce((t, p) => t + (p.io[k]?.bytes ?? 0), 0)),
    );
  }
  return summaryOf(measured, bytes);
}

/** Each rank's phases, times in s from the first rank's start. */
function rankResults(reports: readonly RankReport[]): WorkloadResult["ranks"] {
  const origin = Math.min(...reports.map((r) => r.started));
  return reports.map((r) => ({
    rank: r.rank,
    phases: r.phases.map((p) => ({
      iteration: p.iteration,
      phase: p.phase,
      start_s: (p.start - origin) / 1000,
      time_s: (p.end - p.start) / 1000,
      stall_s: p.stall_ms / 1000,
      barrier_s: p.barrier_ms / 1000,
      io: p.io,
    })),
  }));
}

/** Every rank's timeline spans, ms from the first start of a phase of `iteration`. */
function timelineSpans(
  reports: readonly RankReport[],
  iteration: number,
): WorkloadResult["timeline"]["spans"] {
  const spans: WorkloadResult["timeline"]["spans"] = [];
  const t0 = Math.min(
    ...reports.flatMap((r) =>
      r.phases.filter((p) => p.iteration === iteration).map((p) => p.start)
    ),
  );
  for (const r of reports) {
    for (const [stream, kind, label, b, s, e] of r.timeline) {
      spans.push([r.rank, stream, kind, label, b, round3(s - t0), round3(e - t0)]);
    }
  }
  return spans;
}
