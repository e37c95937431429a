/**
 * The placement solver: from the tiers' measured bandwidths, the contention
 * between them and a training setup, where each rank's optimizer subgroups
 * live — host memory, the node-local path, the remote path — and how fast
 * the update phase will be, next to the two baselines on the same figures.
 *
 * The choice is a small mixed-integer program (HiGHS, through the `highs`
 * WebAssembly build): integers n_p (subgroups of a rank on path p) and h_p
 * (of those, kept in host memory across the pass boundary, MLP-Offload's
 * cache, so neither read nor written), and the phase time T:
 *
 * ```
 * minimise T
 *   T ≥ C                                   compute (CPU Adam of a rank)
 *   T ≥ k_p · (n_p − h_p) + g_p · n_p   each path   k_p: busy seconds per uncached subgroup, node-wide
 *   Σ n_p = S                               every subgroup somewhere
 *   0 ≤ h_p ≤ n_p,  Σ h_p · b ≤ H           host cache (b: one subgroup's state on all ranks)
 *   n_p · b ≤ capacity_p                    capacities
 * ```
 *
 * g_p is 0 while the gradients stay in host memory; where they do not fit
 * (solver/host_memory.ts: gradients, the host cache and the pinned swap
 * buffers against the node's memory less the reserve), the plan swaps them
 * as ZeRO-Infinity does, each to its subgroup's path, and g_p is the read of
 * a subgroup's fp32 gradients in the update, cached subgroups included.
 *
 * k_p is read + write of a subgroup's params, m and v at the path's
 * bandwidths (reading and writing at once where measured so), each times the
 * contention slowdown while the other path runs — or, where the pair was
 * measured with both paths reading and writing (`together`), at those rates.
 *
 * The path's bandwidths are its totals with its readers and writers at once
 * (solver/concurrency.ts: the profile's concurrency curve at the path's
 * request size, or the tier's one figure without a curve). Readers and
 * writers are part of the placement: the program is solved with one at a
 * time on every path (MLP-Offload's locks), with all R ranks on each path
 * that has a curve, and with each direction at the count where its curve
 * peaks; the placement whose simulation is shortest is the plan, and the
 * why gives each path's figures at 1 and at R. ZeRO-Infinity is costed with
 * all R ranks on the local path at once (each rank's share the total at R
 * over R); MLP-Offload's fixed ratio with one reader and one writer per
 * path node-wide.
 *
 * That closed form (solver/model.ts) gives each prediction's breakdown
 * (read, write, compute). The phase time and each path's busy time come from
 * simulating the program the workload runs for the placement
 * (solver/simulate.ts: mlp-offload for the plan, zero-infinity for its
 * baseline) at the same rates, moment by moment: the closed form misses the
 * pipeline's fill and drain and how one rank's order over both paths lets a
 * slow remote subgroup hold the local path back. So the program is solved
 * twice: on k_p, then on k_p scaled by how much longer the simulation found
 * each path busy than the closed form did; the faster placement, as
 * simulated, is the plan.
 *
 * @module
 */

import * as highsModule from "highs";
import type { Highs } from "highs";
import type { TrainingSetup } from "../workloads/setup.ts";
import { gb } from "./host_memory.ts";
import type { Solution, SolveInput } from "./_solve_input.ts";
import { buffersOf, type SolveContext, solveSizes, stateBytes } from "./_solve_context.ts";
import { limitCandidates, placeWith } from "./_solve_place.ts";
import { baselineInfinity, baselineOffload, mlpOffloadPrediction } from "./_solve_baselines.ts";
import { explainDos, explainGradients, explainPlacement, reserveText } from "./_solve_explain.ts";

export type { Solution, SolveInput } from "./_solve_input.ts";

/** highs is CommonJS: its loader is the module's default export at run time. */
const highsLoader = highsModule.default as unknown as () => Promise<Highs>;
let highs: Promise<Highs> | undefined;

/**
 * Solves the placement for `input`.
 *
 * @example
 * ```ts
 * import { resolveSetup } from "../workloads/setup.ts";
 * import { solve } from "./solve.ts";
 * const s = await solve({
 *   setup: resolveSetup({ model: "70b" }),
 *   local: { label: "file", readBw: 6e9, writeBw: 3e9, bs: 1 << 20, iodepth: 8 },
 *   remote: { label: "pfs", readBw: 3e9, writeBw: 2e9, bs: 1 << 20, iodepth: 8 },
 *   hostCacheBytes: 64 * 2 ** 30,
 * });
 * console.assert(s.predictions.plan.update_s <= s.predictions.zero_infinity.update_s);
 * ```
 */
export async function solve(input: SolveInput): Promise<Solution> {
  const both = await solveWith(input, false);
  // the remote path's swap buffers took host memory the plan did not use: plan again without
  // them (and without the remote path), keeping the faster; MLP-Offload's baseline uses both
  const plan = both.predictions.plan;
  if (
    !input.remote || input.hostMemoryBytes === undefined ||
    both.paths.filter((p) => p.subgroups > 0).length !== 1 || both.paths[0]!.subgroups === 0
  ) {
    return both;
  }
  const local = await solveWith(input, true);
  const better = local.predictions.plan.feasible &&
    (!plan.feasible || local.predictions.plan.update_s < plan.update_s);
  if (!better) return both;
  return {
    ...local,
    predictions: {
      ...local.predictions,
      ...(both.predictions.mlp_offload ? { mlp_offload: both.predictions.mlp_offload } : {}),
    },
    why: [
      ...local.why,
      `the remote path is left unused so that its swap buffers stay free for the host cache and gradients: ${
        plan.update_s.toFixed(2)
      } s → ${local.predictions.plan.update_s.toFixed(2)} s`,
    ],
  };
}

/** The solver, with the remote path's buffers budgeted, or with it `localOnly`. */
async function solveWith(input: SolveInput, localOnly: boolean): Promise<Solution> {
  const t0 = performance.now();
  const sizes = solveSizes(input, localOnly);
  const { setup, S, R, computeS, available } = sizes;
  const zeroOffload = baselineOffload(input, computeS, available);
  const zeroInfinity = baselineInfinity(input, computeS, available, buffersOf(sizes, 1));
  // Deep Optimizer States: the stride depends on the setup, not on the placement
  const dos = input.gpu ? bestStride(setup, S, sizes.avg, input.gpu) : undefined;
  highs ??= highsLoader();
  const c: SolveContext = { ...sizes, dos, solver: await highs };
  // readers and writers per path as part of the placement: one at a time (MLP-Offload's), all R
  // ranks, and the count where each curve peaks; without curves only one at a time, as before
  const tried = limitCandidates(c.tiers, R).map((limits) => placeWith(c, limits));
  let best = tried[0]!;
  for (const t of tried.slice(1)) if (t.plan.update_s < best.plan.update_s - 1e-9) best = t;
  const { res, paths, dosStride, plan, refined } = best;
  const why = explainPlacement(c, best, tried);
  const mem = plan.host_memory!;
  why.push(explainGradients(c, mem));
  if (!mem.fits) {
    plan.feasible = false;
    plan.note = `the plan needs ${gb(mem.total_bytes)} of host memory, ${
      gb(mem.available_bytes)
    } is available${reserveText(input)}`;
  }
  if (refined) why.push(refined);
  why.push(...explainDos(c, dosStride));
  const predictions: Solution["predictions"] = {
    zero_offload: zeroOffload,
    zero_infinity: zeroInfinity,
    plan,
    // one reader and one writer per path, node-wide, as its locks allow
    ...(input.remote ? { mlp_offload: mlpOffloadPrediction(c, paths) } : {}),
  };
  return {
    paths,
    predictions,
    why,
    ...(dosStride !== undefined ? { dosStride } : {}),
    solver: { status: res.Status, seconds: (performance.now() - t0) / 1000, subgroups: S },
  };
}

/**
 * Deep Optimizer States: the stride K (every K-th subgroup updated on the GPU,
 * its params, m and v copied host→device and back while the CPU updates the
 * others) that makes the compute shortest; undefined stride when no K helps.
 */
export function bestStride(
  setup: TrainingSetup,
  subgroups: number,
  elements: number,
  gpu: { pcieBytesPerS: number; adamParamsPerS: number },
): { stride: number | undefined; computeS: number } {
  const cpuOnly = (subgroups * elements) / setup.adamParamsPerSec;
  let best: { stride: number | undefined; computeS: number } = {
    stride: undefined,
    computeS: cpuOnly,
  };
  const perGpuSubgroup = (2 * stateBytes(setup, elements)) / gpu.pcieBytesPerS +
    elements / gpu.adamParamsPerS;
  for (let K = 1; K <= subgroups; K++) {
    const g = Math.floor(subgroups / K);
    const cpu = ((subgroups - g) * elements) / setup.adamParamsPerSec;
    const t = Math.max(cpu, g * perGpuSubgroup);
    if (t < best.computeS) best = { stride: K, computeS: t };
  }
  return best;
}
