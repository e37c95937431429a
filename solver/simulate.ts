/**
 * The pipeline simulator: runs a workload's program (workloads/ops.ts) on a
 * model of the tiers instead of on the tiers, and says how long each phase
 * takes — the same ops, streams, dependencies and node-wide limits the
 * executor (workloads/_rank.ts) runs, with every transfer moving at the
 * bandwidth the profile measured for what is running beside it.
 *
 * Why not a formula: the update phase is a pipeline over ranks and paths. A
 * rank updates its subgroups in one order across both paths, so a slow
 * remote subgroup at the head of a pass holds the local path back; reads run
 * ahead of writes and leave writes alone at the end; one rank at a time reads
 * a path, so the last rank starts late. A closed form of busy time per path
 * misses all of that (on this machine by 10–20 % for plans over file and
 * CephFS); stepping through the program does not.
 *
 * The model is fluid: a transfer has bytes left and a rate, and rates change
 * only when some transfer starts or ends. The rate of a transfer comes from
 * {@linkcode RateOf}, given which path directions are moving data at that
 * moment and how many transfers (ranks) each has in flight — a tier's
 * total changes with the processes hitting it at once
 * (solver/concurrency.ts) — shared evenly by the transfers of the same path
 * and direction.
 * Compute ops take their think time; hits take none; a barrier releases when
 * every rank has reached it; a lock op is done when its node-wide lock is
 * free (first come, first served), and holds it until its unlock op. Per-request latency is not modelled (the
 * bandwidths were measured at the block size and depth the program uses).
 *
 * @module
 */

import { unionLength } from "../core/stats.ts";
import type { Op, WorkloadProgram } from "../workloads/ops.ts";
import { opGraph, pathKeys, type RateOf, rateTable } from "./_simulate_graph.ts";
import { FluidRun } from "./_simulate_run.ts";
import { SIMULATED_TIMELINE_CAP, type SimulatedTimeline } from "../schema/plan.ts";

export type { RateOf } from "./_simulate_graph.ts";

/** One phase of one iteration, node-wide. */
export interface SimulatedPhase {
  readonly iteration: number;
  readonly phase: string;
  /** From the earliest rank's start to the latest rank's end, s (as workloads/result.ts measures). */
  readonly time_s: number;
  /** Per path: time with an op of the path started and not done (slot waits included), s. */
  readonly busy_s: Readonly<Record<string, number>>;
  /** Bytes moved, all ranks, by `path:read` / `path:write`. */
  readonly bytes: Readonly<Record<string, number>>;
}

/** What the simulation found. */
export interface Simulation {
  readonly phases: readonly SimulatedPhase[];
  /** Simulated seconds of the whole program. */
  readonly end_s: number;
  /** With `timelineIterations`: the ops of those iterations as spans. */
  readonly timeline?: SimulatedTimeline;
}

/** What {@linkcode simulate} keeps beside the phases. */
export interface SimulateOptions {
  /** Iterations whose ops become timeline spans. */
  readonly timelineIterations?: readonly number[];
}

/**
 * Simulates `program` with bandwidths from `rateOf`.
 *
 * @example
 * ```ts
 * import { simulate } from "./simulate.ts";
 * import { ProgramBuilder } from "../workloads/ops.ts";
 * const b = new ProgramBuilder(0);
 * const at = { iteration: 0, phase: "update", path: "local", object: "x", bytes: 2e9 };
 * const r = b.add({ ...at, kind: "read", stream: "local:read", label: "x" });
 * b.add({ kind: "compute", stream: "compute", iteration: 0, phase: "update", ms: 500, label: "adam", bytes: 0, after: [r] });
 * const program = {
 *   workload: "demo", warmupIterations: 0, iterations: 1, derived: {}, notes: [],
 *   paths: [{ name: "local", role: "local" as const, bs: 1 << 20, iodepth: 8 }],
 *   ranks: [b.build()],
 * };
 * const sim = simulate(program, () => 1e9);
 * console.assert(Math.abs(sim.phases[0]!.time_s - 2.5) < 1e-9);
 * ```
 */
export function simulate(
  program: WorkloadProgram,
  rateOf: RateOf,
  options: SimulateOptions = {},
): Simulation {
  const ranks = program.ranks;
  const graph = opGraph(ranks);
  const { ops, rankOf } = graph;
  const paths = pathKeys(program, ops);
  const sim = new FluidRun(graph, ranks.length, paths, rateTable(paths.keys, rateOf));
  sim.run();
  const { start, end } = sim;
  if (sim.done < ops.length) {
    const stuck = ops.findIndex((_, g) => Number.isNaN(end[g]!));
    throw new RangeError(
      `the program cannot finish: op ${ops[stuck]!.label} of rank ${rankOf[stuck]} never ran`,
    );
  }
  const phases = phasesOf(ops, rankOf, start, end);
  const its = options.timelineIterations;
  if (!its || its.length === 0) return { phases, end_s: sim.now };
  return {
    phases,
    end_s: sim.now,
    timeline: timelineOf(ops, ranks.map((r) => r.rank), rankOf, start, end, its),
  };
}

/** The spans of the ops of iterations `its` (barriers left out), ms from each one's first start. */
function timelineOf(
  ops: readonly Op[],
  rankNo: readonly number[],
  rankOf: Int32Array,
  start: Float64Array,
  end: Float64Array,
  its: readonly number[],
): SimulatedTimeline {
  const wanted = new Set(its);
  const t0 = new Map<number, number>();
  ops.forEach((op, g) => {
    if (!wanted.has(op.iteration) || op.kind === "barrier") return;
    t0.set(op.iteration, Math.min(t0.get(op.iteration) ?? Infinity, start[g]!));
  });
  const ms = (s: number) => Math.round(s * 1e6) / 1000;
  const spans: SimulatedTimeline["spans"] = [];
  let cut = false;
  ops.forEach((op, g) => {
    if (!wanted.has(op.iteration) || op.kind === "barrier") return;
    if (spans.length >= SIMULATED_TIMELINE_CAP) return void (cut = true);
    const base = t0.get(op.iteration)!;
    spans.push([
      op.iteration,
      rankNo[rankOf[g]!]!,
      op.stream,
      op.kind,
      op.label,
      op.bytes,
      ms(start[g]! - base),
      ms(end[g]! - base),
    ]);
  });
  return {
    columns: ["iteration", "rank", "stream", "kind", "label", "bytes", "start_ms", "end_ms"],
    spans,
    cut,
  };
}

/** Node-wide phase times and per-path busy times, as workloads/result.ts and solver/replay.ts measure them. */
function phasesOf(
  ops: readonly Op[],
  rankOf: Int32Array,
  start: Float64Array,
  end: Float64Array,
): SimulatedPhase[] {
  interface Acc {
    iteration: number;
    phase: string;
    ranks: Map<number, { start: number; end: number }>;
    /** Per path: its read and write ops, and the bytes each direction moved. */
    paths: Map<string, { ops: number[]; read: number; write: number }>;
  }
  // by iteration, then phase name: no string built per op
  const acc = new Map<number, Map<string, Acc>>();
  ops.forEach((op, g) => {
    let byPhase = acc.get(op.iteration);
    if (!byPhase) acc.set(op.iteration, byPhase = new Map());
    let a = byPhase.get(op.phase);
    if (!a) {
      byPhase.set(
        op.phase,
        a = { iteration: op.iteration, phase: op.phase, ranks: new Map(), paths: new Map() },
      );
    }
    let r = a.ranks.get(rankOf[g]!);
    if (!r) a.ranks.set(rankOf[g]!, r = { start: Infinity, end: -Infinity });
    r.start = Math.min(r.start, op.kind === "barrier" ? end[g]! : start[g]!);
    if (!op.background) r.end = Math.max(r.end, end[g]!);
    if ((op.kind === "read" || op.kind === "write") && op.path !== undefined) {
      let p = a.paths.get(op.path);
      if (!p) a.paths.set(op.path, p = { ops: [], read: 0, write: 0 });
      p.ops.push(g);
      p[op.kind] += op.bytes;
    }
  });
  return [...acc.values()].flatMap((m) => [...m.values()]).map((a) => {
    let first = Infinity, last = -Infinity;
    for (const r of a.ranks.values()) {
      if (r.end === -Infinity) continue;
      first = Math.min(first, r.start);
      last = Math.max(last, r.end);
    }
    const busy: Record<string, number> = {};
    const bytes: Record<string, number> = {};
    for (const [path, p] of a.paths) {
      busy[path] = busyLength(p.ops, start, end);
      if (p.read > 0) bytes[`${path}:read`] = p.read;
      if (p.write > 0) bytes[`${path}:write`] = p.write;
    }
    return {
      iteration: a.iteration,
      phase: a.phase,
      time_s: last === -Infinity ? 0 : last - first,
      busy_s: busy,
      bytes,
    };
  });
}

/** Length of the union of the ops' [start, end] intervals (`list` holds op indices). */
function busyLength(list: readonly number[], start: Float64Array, end: Float64Array): number {
  return unionLength(list.map((g) => [start[g]!, end[g]!] as const));
}
