/**
 * One placement of solve.ts: the mixed-integer program for per-subgroup
 * costs, solved with HiGHS, its closed form and its simulation; refined
 * once on the simulated busy times; and the readers and writers per path
 * it is tried with.
 *
 * @module
 */

import type { Highs } from "highs";
import { predictPhase } from "./model.ts";
import { type SimulatedUpdate, simulatePlacement } from "./_pipeline.ts";
import type { PlannedPath, Prediction } from "../schema/plan.ts";
import { bestProcesses, concurrentBandwidth, hasCurve } from "./concurrency.ts";
import type { SolverTier } from "./solver_tier.ts";
import {
  type Limit,
  memoryOf,
  ONE,
  type Rates,
  ratesAt,
  ratesOf,
  type SolveContext,
  type SolveSizes,
  stateBytes,
} from "./_solve_context.ts";

/** A placement: the solver's answer, its paths, closed form and simulated prediction. */
export interface Placement {
  readonly res: ReturnType<Highs["solve"]>;
  readonly paths: PlannedPath[];
  readonly closed: Prediction;
  /** Deep Optimizer States' stride, where it shortens the closed form. */
  readonly dosStride: number | undefined;
  /** The prediction: the closed form's breakdown, the simulation's phase and busy times. */
  readonly plan: Prediction;
  readonly limits: readonly Limit[];
  readonly rates: Rates;
}

/** A placement refined once on the simulated busy times, with the sentence that says so. */
export interface RefinedPlacement extends Placement {
  readonly refined: string | undefined;
}

/**
 * The breakdown (read, write, compute) from the closed form; the phase time
 * and the paths' busy times from the pipeline itself, simulated at the
 * input's rates (the simulation runs each path's readers and writers as the
 * placement limits them).
 */
export function simulated(
  c: SolveSizes,
  paths: PlannedPath[],
  p: Prediction,
  adamRate: number,
): Prediction {
  return withSimulation(
    { ...p, host_memory: memoryOf(c, paths) },
    simulatePlacement(
      { ...c.setup, adamParamsPerSec: adamRate },
      paths,
      c.input,
      c.gradientsSwapped,
    ),
  );
}

/** The closed form of a placement: each used path's uncached bytes at its rates. */
export function closedOf(
  c: SolveSizes,
  paths: readonly PlannedPath[],
  rates: Rates,
  compute: number = c.computeS,
): Prediction {
  const { setup, avg, R, slow } = c;
  const used = paths.filter((p) => p.subgroups > 0);
  const loads = used.map((p) => {
    const i = c.names.indexOf(p.name);
    const t = rates.at[i]!;
    const moved = stateBytes(setup, avg) * (p.subgroups - p.cache_subgroups) * R;
    const gradients = c.gradientsSwapped ? setup.bytesPerState * avg * p.subgroups * R : 0;
    const both = used.length > 1;
    return {
      rates: both
        ? ratesOf(rates.contended[i]!, p.name, slow[i]!.read, slow[i]!.write)
        : ratesOf(t, p.name, 1, 1),
      readBytes: moved + gradients,
      writeBytes: moved,
    };
  });
  return predictPhase({ paths: loads, computeS: compute });
}

/**
 * The program solved for per-subgroup costs `cost`: the solver's answer and
 * each path's subgroups (n) and cached subgroups (h).
 *
 * @throws {RangeError} when no placement fits.
 */
function solveProgram(c: SolveContext, rates: Rates, cost: number[]) {
  const { S, tiers } = c;
  const lp = buildLp({
    S,
    computeS: c.computeS,
    k: cost,
    g: rates.g,
    maxCached: c.maxCached,
    capacity: tiers.map((t, i) => c.localOnly && i > 0 ? 0 : t.capacityBytes),
    subgroupNode: c.subgroupNode,
  });
  const res = c.solver.solve(lp, {});
  if (res.Status !== "Optimal") {
    throw new RangeError(
      `no placement fits: the solver says ${res.Status} (check the tiers' capacities against ${
        (S * c.subgroupNode / 2 ** 30).toFixed(1)
      } GiB of optimizer state)`,
    );
  }
  const col = (name: string) =>
    Math.round((res.Columns as Record<string, { Primal: number }>)[name]?.Primal ?? 0);
  return { res, n: tiers.map((_, i) => col(`n${i}`)), h: tiers.map((_, i) => col(`h${i}`)) };
}

/** The planned paths of `n` subgroups and `h` cached per path, with `limits`. */
function plannedPaths(
  c: SolveSizes,
  limits: readonly Limit[],
  n: readonly number[],
  h: readonly number[],
): PlannedPath[] {
  return c.tiers.map((t, i) => ({
    name: c.names[i]!,
    tier: t.label,
    subgroups: n[i]!,
    ratio: n[i]! / c.S,
    cache_subgroups: h[i]!,
    readers: limits[i]!.readers,
    writers: limits[i]!.writers,
    concurrency_basis: [
      concurrentBandwidth(t, "read", limits[i]!.readers).basis,
      concurrentBandwidth(t, "write", limits[i]!.writers).basis,
    ],
    bs: t.bs,
    iodepth: t.iodepth,
  }));
}

/**
 * One placement for per-subgroup costs `cost` with `limits`, its closed
 * form, and its simulation; undefined when it is `same`'s placement.
 */
export function place(
  c: SolveContext,
  limits: readonly Limit[],
  rates: Rates,
  cost: number[],
  same?: { paths: PlannedPath[] },
): Placement | undefined {
  const { res, n, h } = solveProgram(c, rates, cost);
  const paths = plannedPaths(c, limits, n, h);
  if (
    same?.paths.every((p, i) =>
      p.subgroups === paths[i]!.subgroups && p.cache_subgroups === paths[i]!.cache_subgroups
    )
  ) {
    return undefined;
  }
  const { dos, setup, computeS } = c;
  const closed = closedOf(c, paths, rates);
  // Deep Optimizer States pays off when the closed form says the phase waits for compute
  const closedDos = dos && closedOf(c, paths, rates, dos.computeS);
  const dosStride = dos?.stride !== undefined && closedDos!.update_s < closed.update_s
    ? dos.stride
    : undefined;
  const plan = dosStride === undefined
    ? simulated(c, paths, closed, setup.adamParamsPerSec)
    : simulated(c, paths, closedDos!, setup.adamParamsPerSec * computeS / dos!.computeS);
  return { res, paths, closed, dosStride, plan, limits, rates };
}

/** The placement with `limits`, refined once on the simulated busy times. */
export function placeWith(c: SolveContext, limits: readonly Limit[]): RefinedPlacement {
  const rates = ratesAt(c, limits);
  let best = place(c, limits, rates, rates.k)!;
  // the closed form misses the pipeline: cost each path as the simulation found it and ask
  // the solver again, keeping the faster of the two
  let refined: string | undefined;
  if (best.paths.length > 1 && best.paths.every((p) => p.subgroups > 0)) {
    const first = best;
    const found = (name: string) =>
      (first.plan.path_s?.[name] ?? 0) / (first.closed.path_s?.[name] ?? 0);
    const again = place(
      c,
      limits,
      rates,
      rates.k.map((cost, i) => {
        const f = found(c.names[i]!);
        return Number.isFinite(f) && f > 0 ? cost * f : cost;
      }),
      first,
    );
    if (again && again.plan.update_s < first.plan.update_s) {
      best = again;
      refined = `the simulated pipeline moved the split from ${
        first.paths.map((p) => p.subgroups).join(":")
      } to ${again.paths.map((p) => p.subgroups).join(":")}: ${
        first.plan.update_s.toFixed(2)
      } s → ${
        again.plan.update_s.toFixed(2)
      } s (a path's busy time per subgroup as simulated, not as the closed form has it)`;
    }
  }
  return { ...best, refined };
}

/**
 * The readers and writers per path the solver weighs: one at a time on every
 * path first (MLP-Offload's, and the only choice where no path has a curve:
 * the flat default gives every count the same total), then all `ranks` on
 * each path with a curve, then each direction at the count where its curve
 * peaks.
 */
export function limitCandidates(tiers: readonly SolverTier[], ranks: number): Limit[][] {
  const out: Limit[][] = [tiers.map(() => ONE)];
  if (!tiers.some(hasCurve)) return out;
  out.push(tiers.map((t) => hasCurve(t) ? { readers: ranks, writers: ranks } : ONE));
  out.push(
    tiers.map((t) =>
      hasCurve(t)
        ? { readers: bestProcesses(t, "read", ranks), writers: bestProcesses(t, "write", ranks) }
        : ONE
    ),
  );
  const seen = new Set<string>();
  return out.filter((l) => {
    const key = JSON.stringify(l);
    return !seen.has(key) && seen.add(key);
  });
}

/** The program in CPLEX LP format. */
function buildLp(
  m: {
    S: number;
    computeS: number;
    k: number[];
    g: number[];
    maxCached: number;
    capacity: (number | undefined)[];
    subgroupNode: number;
  },
): string {
  const paths = m.k.map((_, i) => i);
  const c: string[] = [];
  for (const i of paths) {
    c.push(` busy${i}: T - ${m.k[i]! + m.g[i]!} n${i} + ${m.k[i]} h${i} >= 0`);
  }
  c.push(` all: ${paths.map((i) => `n${i}`).join(" + ")} = ${m.S}`);
  for (const i of paths) c.push(` cached${i}: h${i} - n${i} <= 0`);
  c.push(` cache: ${paths.map((i) => `h${i}`).join(" + ")} <= ${m.maxCached}`);
  for (const i of paths) {
    const cap = m.capacity[i];
    if (cap !== undefined) c.push(` capacity${i}: n${i} <= ${Math.floor(cap / m.subgroupNode)}`);
  }
  const bounds = [
    ` T >= ${m.computeS}`,
    ...paths.flatMap((i) => [` 0 <= n${i} <= ${m.S}`, ` 0 <= h${i} <= ${m.S}`]),
  ];
  return [
    "Minimize",
    // a tiny preference for caching more, so ties keep the cache full
    ` obj: T ${paths.map((i) => `- 1e-9 h${i}`).join(" ")}`,
    "Subject To",
    ...c,
    "Bounds",
    ...bounds,
    "General",
    ` ${paths.map((i) => `n${i} h${i}`).join(" ")}`,
    "End",
  ].join("\n");
}

/** A closed-form prediction with the phase, busy times and bytes the simulation found. */
export function withSimulation(closed: Prediction, sim: SimulatedUpdate): Prediction {
  return {
    ...closed,
    update_s: sim.update_s,
    overlap_s: Math.max(0, closed.read_s + closed.write_s + closed.compute_s - sim.update_s),
    path_s: sim.path_s,
    bytes: sim.bytes,
    method: "simulated",
    ...(sim.timeline ? { timeline: sim.timeline } : {}),
  };
}
