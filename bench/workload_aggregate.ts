/**
 * One workload result from several nodes' results (`workload` across
 * processes, docs/multinode.md): a training step across nodes is as slow as
 * its slowest node, so each iteration's and each phase's time is the largest
 * over nodes; bytes, ops and busy times are summed; a path's bandwidth in a
 * phase is the summed bytes over the phase's aggregate time. The result has
 * the shape of a single node's, so every table and report reads it.
 *
 * No clocks need to agree: every node's times are relative to its own start,
 * and every node started at the same barrier.
 *
 * @module
 */

import {
  type IterationResult,
  type PathIoResult,
  type PhaseResult,
  summaryOf,
  type WorkloadResult,
  type WorkloadSummary,
} from "../schema/workload.ts";

/** One node's result: the rank of its process, its node, what it measured. */
export interface NodeWorkload {
  readonly rank: number;
  readonly node: string;
  readonly workload: WorkloadResult;
}

/**
 * Aggregates the nodes' results (at least one, in rank order) into one.
 *
 * - `iterations[i].iteration_s`, `stall_s` and each phase's `time_s` and
 *   `stall_s`: the largest over nodes;
 * - each phase's `io`: `bytes`, `ops`, `busy_s`, `slot_wait_s` summed, and
 *   `bw_bytes` the summed bytes over the aggregate `time_s`;
 * - `summary`: medians over the aggregate iterations as on one node, and
 *   `bytes` the nodes' per-iteration bytes summed (absent unless every node
 *   has a summary);
 * - `paths[].peak_readers`/`peak_writers`: the largest on any node (the
 *   limits hold per node);
 * - `ranks` and `timeline`: every node's, ranks numbered across nodes in
 *   rank order of their processes (node i's rank r is r plus the ranks of the
 *   nodes before it), times relative to each node's own start.
 *
 * @throws {RangeError} with no results.
 *
 * @example
 * ```ts ignore
 * const all = aggregateWorkloads(parts);
 * console.log(all.summary?.iteration_s, all.summary?.bytes["remote:write"]);
 * ```
 */
export function aggregateWorkloads(parts: readonly NodeWorkload[]): WorkloadResult {
  const base = parts[0]?.workload;
  if (base === undefined) throw new RangeError("aggregateWorkloads() needs at least one result");
  const results = parts.map((p) => p.workload);
  const iterations = base.iterations.map((it) =>
    aggregateIteration(
      it,
      results.flatMap((w) => w.iterations.filter((x) => x.iteration === it.iteration)),
    )
  );
  const summaries = results.map((w) => w.summary);
  const summary = summaries.every((s): s is WorkloadSummary => s !== null)
    ? summarize(iterations, summaries)
    : null;
  const ranks: WorkloadResult["ranks"] = [];
  const spans: WorkloadResult["timeline"]["spans"] = [];
  let offset = 0;
  for (const w of results) {
    for (const r of w.ranks) ranks.push({ ...r, rank: r.rank + offset });
    for (const [rank, ...rest] of w.timeline.spans) spans.push([rank + offset, ...rest]);
    offset += w.ranks.length;
  }
  const notes = [...new Set(results.flatMap((w) => w.notes))];
  // --background-rate: every node's schedules, ranks numbered across nodes as above.
  const rates = results.map((w) => w.background_rate);
  let backgroundRate: WorkloadResult["background_rate"];
  if (rates.every((r) => r !== undefined) && rates.length > 0) {
    const schedules = [];
    let before = 0;
    for (const [i, w] of results.entries()) {
      for (const x of rates[i]!.schedules) schedules.push({ ...x, rank: x.rank + before });
      before += w.ranks.length;
    }
    backgroundRate = {
      bytes_per_s: rates[0]!.bytes_per_s,
      met: schedules.every((x) => x.met),
      schedules,
    };
  }
  notes.push(
    `${parts.length} nodes (${parts.map((p) => p.node).join(", ")}): iteration and phase ` +
      `times are the slowest node's, bytes summed over nodes`,
  );
  // --verify: what every node checked, summed (absent unless every node checked)
  const checks = results.map((w) => w.verify);
  const verify = checks.length > 0 && checks.every((c) => c !== undefined)
    ? { checked_bytes: checks.reduce((n, c) => n + c!.checked_bytes, 0) }
    : undefined;
  // The background schedules and checks are the aggregate's own (above), never one node's.
  const { background_rate: _oneNode, verify: _oneNodeChecked, ...rest } = base;
  return {
    ...rest,
    notes,
    paths: base.paths.map((p, i) => {
      const peak = (key: "peak_readers" | "peak_writers") => {
        const xs = results.flatMap((w) => {
          const v = w.paths[i]?.[key];
          return v === undefined ? [] : [v];
        });
        return xs.length === 0 ? {} : { [key]: Math.max(...xs) };
      };
      return { ...p, ...peak("peak_readers"), ...peak("peak_writers") };
    }),
    summary,
    iterations,
    ranks,
    ...(backgroundRate === undefined ? {} : { background_rate: backgroundRate }),
    ...(verify === undefined ? {} : { verify }),
    timeline: { ...base.timeline, spans },
  };
}

function aggregateIteration(
  base: IterationResult,
  of: readonly IterationResult[],
): IterationResult {
  const names = [...new Set(of.flatMap((it) => Object.keys(it.phases)))];
  const phases: Record<string, PhaseResult> = {};
  for (const name of names) {
    const list = of.flatMap((it) => (it.phases[name] ? [it.phases[name]] : []));
    const time = Math.max(...list.map((p) => p.time_s));
    const io: Record<string, PathIoResult> = {};
    for (const p of list) {
      for (const [k, v] of Object.entries(p.io)) {
        const t = io[k] ??= { bytes: 0, ops: 0, bw_bytes: 0, busy_s: 0, slot_wait_s: 0 };
        t.bytes += v.bytes;
        t.ops += v.ops;
        t.busy_s += v.busy_s;
        t.slot_wait_s += v.slot_wait_s;
      }
    }
    for (const t of Object.values(io)) t.bw_bytes = time > 0 ? t.bytes / time : 0;
    phases[name] = {
      time_s: time,
      stall_s: Math.max(...list.map((p) => p.stall_s)),
      background: list.every((p) => p.background),
      io,
    };
  }
  return {
    iteration: base.iteration,
    warmup: base.warmup,
    iteration_s: Math.max(...of.map((it) => it.iteration_s)),
    stall_s: Math.max(...of.map((it) => it.stall_s)),
    phases,
  };
}

function summarize(
  iterations: readonly IterationResult[],
  summaries: readonly WorkloadSummary[],
): WorkloadSummary | null {
  const measured = iterations.filter((it) => !it.warmup);
  if (measured.length === 0) return null;
  const bytes: Record<string, number> = {};
  for (const k of [...new Set(summaries.flatMap((s) => Object.keys(s.bytes)))].sort()) {
    bytes[k] = summaries.reduce((t, s) => t + (s.bytes[k] ?? 0), 0);
  }
  return summaryOf(measured, bytes);
}
