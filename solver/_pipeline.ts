/**
 * Predictions by simulation: the program the workload would run for a
 * placement (mlp-offload for a plan, zero-infinity for its baseline), stepped
 * through solver/simulate.ts at the rates the profile gives the tiers.
 *
 * A path direction moves at:
 * - the pair's `together` rate, while its own other direction and both
 *   directions of the other path move too and the pair was measured so
 *   (with R processes per job too, where measured: the other path's ranks
 *   in flight set which applies);
 * - otherwise, while its own other direction moves, its mixed rate where
 *   measured, else half its rate alone (the two take turns: reads and writes
 *   add, as in solver/model.ts); alone, its own rate; either divided by the
 *   largest contention slowdown among the other path's moving directions.
 *
 * @module
 */

import { mlpOffload } from "../workloads/mlp_offload.ts";
import type { Op, RankProgram, WorkloadProgram } from "../workloads/ops.ts";
import type { TrainingSetup } from "../workloads/setup.ts";
import { zeroInfinity } from "../workloads/zero_infinity.ts";
import { placementOptions, type PlannedPath, type SimulatedTimeline } from "../schema/plan.ts";

import { type RateOf, simulate, type SimulatedPhase } from "./simulate.ts";
import type { SlowdownLookup, SolverTier, TogetherLookup } from "./solver_tier.ts";
import type { Direction } from "../schema/profile.ts";
import { concurrentBandwidth } from "./concurrency.ts";

/** What the rates come from. */
export interface PipelineTiers {
  readonly local: SolverTier;
  readonly remote?: SolverTier;
  readonly slowdown?: SlowdownLookup;
  readonly together?: TogetherLookup;
}

/** A simulated update phase: the mean over steady iterations (one pass each way). */
export interface SimulatedUpdate {
  readonly update_s: number;
  /** Per path, busy seconds (an op started and not done). */
  readonly path_s: Record<string, number>;
  /** Bytes moved per iteration, all ranks, by `path:read` / `path:write`. */
  readonly bytes: Record<string, number>;
  /** The steady iterations' ops as spans. */
  readonly timeline?: SimulatedTimeline;
}

/**
 * The rates of the paths `local` and `remote` on `tiers`, with `n` ranks in
 * flight on a path direction: its total at n processes at once
 * (solver/concurrency.ts; the tier's one figure without a curve), reading
 * while writing at the mixed total at n; while both paths read and write,
 * that total divided by the slowdown the pair's `together` rates show — at
 * one job each, or, as the other path has more transfers in flight, moved
 * linearly towards the slowdown measured with R processes per job
 * (`together_at`) where the profile has it.
 */
export function pipelineRates(tiers: PipelineTiers): RateOf {
  const look = tiers.slowdown ?? (() => 1);
  const flip = (d: Direction): Direction => (d === "read" ? "write" : "read");
  return (path, direction, active, inflight) => {
    const t = path === "remote" ? tiers.remote : tiers.local;
    if (!t) throw new TypeError(`no tier for path "${path}"`);
    const n = Math.max(1, inflight?.get(`${path}:${direction}`) ?? 1);
    const otherName = path === "remote" ? "local" : "remote";
    const o = path === "remote" ? tiers.local : tiers.remote;
    const own = active.has(`${path}:${flip(direction)}`);
    const others = o
      ? (["read", "write"] as const).filter((d) => active.has(`${otherName}:${d}`))
      : [];
    if (own && others.length === 2) {
      const both = tiers.together?.(t.label, o!.label);
      if (both) {
        const mixed = (k: number) => concurrentBandwidth(t, direction, k, { mixed: true }).total;
        // what the other path costs this one: at one job each, and at R each where measured,
        // taken between the two by how many transfers the other path has in flight
        let slow = mixed(1) / (direction === "read" ? both.readBw : both.writeBw);
        const m = Math.max(...others.map((d) => inflight?.get(`${otherName}:${d}`) ?? 1));
        if (both.at && both.at.processes > 1 && m > 1) {
          const r = both.at.processes;
          const atR = mixed(r) / (direction === "read" ? both.at.readBw : both.at.writeBw);
          slow += (atR - slow) * Math.min(1, (m - 1) / (r - 1));
        }
        return mixed(n) / slow;
      }
    }
    // alone, or both directions at once: as measured, or else taking turns (reads and writes add)
    const base = concurrentBandwidth(t, direction, n, { mixed: own }).total;
    const slow = Math.max(1, ...others.map((d) => look(t.label, direction, o!.label, d)));
    return base / slow;
  };
}

/**
 * The setup simulated: one pass each way (ascending, then descending), after
 * a warm-up pass only when a host cache makes the first pass differ.
 */
function steady(setup: TrainingSetup, cached: boolean): TrainingSetup {
  return { ...setup, warmupIterations: cached ? 1 : 0, iterations: 2 };
}

function summarise(program: WorkloadProgram, rates: RateOf): SimulatedUpdate {
  const first = program.warmupIterations;
  const steady = Array.from({ length: program.iterations }, (_, i) => first + i);
  const sim = simulate(program, rates, { timelineIterations: steady });
  const updates = sim.phases.filter((p) =>
    p.phase === "update" && p.iteration >= program.warmupIterations
  );
  const mean = (of: (u: SimulatedPhase) => Readonly<Record<string, number>>) => {
    const out: Record<string, number> = {};
    for (const u of updates) {
      for (const [k, v] of Object.entries(of(u))) out[k] = (out[k] ?? 0) + v / updates.length;
    }
    return out;
  };
  return {
    update_s: updates.reduce((t, u) => t + u.time_s, 0) / updates.length,
    path_s: mean((u) => u.busy_s),
    bytes: mean((u) => u.bytes),
    ...(sim.timeline ? { timeline: sim.timeline } : {}),
  };
}

/**
 * `program` with each update's gradients read back before its Adam: for a
 * subgroup whose params, m and v an update reads (or finds cached), one more
 * read of its fp32 gradients (one state's bytes) from the subgroup's path on
 * that path's read stream, issued when the subgroup's own reads may start;
 * the Adam waits for it. What a plan whose gradients do not fit in host
 * memory does (ZeRO-Infinity's gradient swap-in); mlp-offload's program
 * keeps them in host memory and reads none.
 */
export function withGradientReads(program: WorkloadProgram): WorkloadProgram {
  return { ...program, ranks: program.ranks.map(rankWithGradientReads) };
}

function rankWithGradientReads(rank: RankProgram): RankProgram {
  const out: Op[] = [];
  const newId: number[] = [];
  const byId = new Map(rank.ops.map((op) => [op.id, op]));
  for (const op of rank.ops) {
    const after = op.after.map((a) => newId[a]!);
    if (op.kind === "compute" && op.phase === "update") {
      const inputs = op.after.map((a) => byId.get(a)!).filter((a) =>
        (a.kind === "read" || a.kind === "hit") && a.iteration === op.iteration
      );
      const first = inputs[0];
      if (first?.path !== undefined) {
        const bytes = inputs.reduce((t, a) => t + a.bytes, 0) / inputs.length /
          (first.kind === "hit" ? 3 : 1);
        const subgroup = (first.object ?? first.label).split(".")[0]!;
        const id = out.length;
        out.push({
          id,
          kind: "read",
          stream: `${first.path}:read`,
          iteration: op.iteration,
          phase: op.phase,
          path: first.path,
          object: `${subgroup}.grad`,
          bytes,
          label: `${subgroup}.grad`,
          after: first.after.map((a) => newId[a]!),
        });
        after.push(id);
      }
    }
    newId[op.id] = out.length;
    out.push({ ...op, id: out.length, after });
  }
  return { ...rank, ops: out };
}

/**
 * The update phase of a plan's placement as mlp-offload runs it (what
 * `tierbench replay` runs), simulated; with `gradientsSwapped`, each
 * subgroup's gradients are read back in the update too
 * ({@linkcode withGradientReads}).
 */
export function simulatePlacement(
  setup: TrainingSetup,
  paths: readonly PlannedPath[],
  tiers: PipelineTiers,
  gradientsSwapped = false,
): SimulatedUpdate {
  const options = placementOptions(paths);
  const cached = paths.some((p) => p.cache_subgroups > 0);
  const program = mlpOffload.build(
    steady(setup, cached),
    { local: ["local"], ...(options.remoteRatio! > 0 ? { remote: "remote" } : {}) },
    options,
  );
  return summarise(gradientsSwapped ? withGradientReads(program) : program, pipelineRates(tiers));
}

/**
 * A workload's program, simulated at the rates `tiers` give its paths
 * `local` and `remote`: the mean update phase over its measured iterations.
 */
export function simulateProgram(program: WorkloadProgram, tiers: PipelineTiers): SimulatedUpdate {
  return summarise(program, pipelineRates(tiers));
}

/** The update phase of ZeRO-Infinity (every subgroup on the local path), simulated. */
export function simulateInfinity(setup: TrainingSetup, tiers: PipelineTiers): SimulatedUpdate {
  // every pass ascending, nothing cached; the first update reads no m and v (the optimizer has
  // none yet): one warm-up pass, then the steady one
  const once = { ...setup, warmupIterations: 1, iterations: 1 };
  const program = zeroInfinity.build(once, { local: ["local"] }, {
    bs: tiers.local.bs,
    iodepth: tiers.local.iodepth,
  });
  return summarise(program, pipelineRates({ local: tiers.local }));
}
