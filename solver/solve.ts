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
import { shardParameters, subgroupSizes, type TrainingSetup } from "../workloads/setup.ts";
import { type PathRates, pathSeconds, predictPhase } from "./model.ts";
import { type SimulatedUpdate, simulateInfinity, simulatePlacement } from "./_pipeline.ts";
import type { HostMemoryUse, PlannedPath, Prediction } from "../schema/plan.ts";
import { describeHostMemory, gb, hostMemoryUse, SWAP_BUFFER_COUNT } from "./host_memory.ts";
import { bestProcesses, concurrentBandwidth, hasCurve } from "./concurrency.ts";
import { FLAT_CONCURRENCY_NOTE } from "../schema/profile.ts";
import type { SlowdownLookup, SolverTier, TogetherLookup } from "./solver_tier.ts";
import {
  MLP_OFFLOAD_CACHE_SUBGROUPS,
  MLP_OFFLOAD_REMOTE_RATIO,
  remoteSubgroups,
} from "../workloads/mlp_offload.ts";

/** What the solver needs. */
export interface SolveInput {
  readonly setup: TrainingSetup;
  /** The node-local tier (NVMe). */
  readonly local: SolverTier;
  /** The remote tier, when there is one. */
  readonly remote?: SolverTier;
  /** Host memory of the node the optimizer state may use as cache, bytes. */
  readonly hostCacheBytes: number;
  /**
   * All host memory of the node, bytes; undefined: host memory is not checked
   * (gradients stay in host memory, as before the check).
   */
  readonly hostMemoryBytes?: number;
  /** Host memory held back for everything else, bytes (default 0). */
  readonly hostReserveBytes?: number;
  readonly slowdown?: SlowdownLookup;
  /**
   * `tier`'s bandwidths, bytes/s, while it reads and writes at once and
   * `other` does too (measured as such: a pair of tiers, a read job and a
   * write job on each); undefined where not measured. Where given, it sets a
   * path's rate while both paths are in use, in place of `slowdown` on its
   * own mixed bandwidths.
   */
  readonly together?: TogetherLookup;
  /** Host↔GPU copy bandwidth of one GPU, bytes/s, and its Adam rate, parameters/s: with both, the
   * solver weighs Deep Optimizer States (every K-th subgroup updated on the GPU). */
  readonly gpu?: { readonly pcieBytesPerS: number; readonly adamParamsPerS: number };
}

/** The solver's answer, before it becomes a plan document. */
export interface Solution {
  readonly paths: PlannedPath[];
  readonly predictions: {
    zero_offload: Prediction;
    zero_infinity: Prediction;
    plan: Prediction;
    /** MLP-Offload's fixed split (one subgroup in three remote), when there is a remote tier. */
    mlp_offload?: Prediction;
  };
  readonly why: string[];
  /** Deep Optimizer States' stride, when it shortens the phase. */
  readonly dosStride?: number;
  /** Solver statistics. */
  readonly solver: { status: string; seconds: number; subgroups: number };
}

/** highs is CommonJS: its loader is the module's default export at run time. */
const highsLoader = highsModule.default as unknown as () => Promise<Highs>;
let highs: Promise<Highs> | undefined;

/** Bytes of one subgroup's params, m and v. */
function stateBytes(s: TrainingSetup, elements: number): number {
  return 3 * s.bytesPerState * elements;
}

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
  const { setup } = input;
  const sizes = subgroupSizes(setup);
  const S = sizes.length;
  const P = shardParameters(setup);
  const R = setup.ranksPerNode;
  const avg = P / S;
  const largest = sizes.reduce((a, b) => Math.max(a, b), 0); // no spread: 1e5 subgroups overflow the stack
  const computeS = P / setup.adamParamsPerSec;
  const subgroupNode = stateBytes(setup, avg) * R; // one subgroup of every rank
  const look = input.slowdown ?? (() => 1);

  // host memory: what is available, the swap buffers, the host cache that fits beside them,
  // and whether the gradients fit beside those (else they are swapped, as ZeRO-Infinity does)
  const available = input.hostMemoryBytes === undefined
    ? Infinity
    : Math.max(0, input.hostMemoryBytes - (input.hostReserveBytes ?? 0));
  const gradientNode = setup.bytesPerState * P * R;
  const buffersOf = (pathsInUse: number) =>
    SWAP_BUFFER_COUNT * setup.bytesPerState * largest * R * pathsInUse;
  const tierCount = input.remote && !localOnly ? 2 : 1;
  const cacheBytes = Math.max(0, Math.min(input.hostCacheBytes, available - buffersOf(tierCount)));
  const gradientsSwapped = gradientNode + cacheBytes + buffersOf(tierCount) > available;
  const memoryOf = (paths: readonly PlannedPath[]): HostMemoryUse => {
    const cached = paths.reduce((t, p) => t + p.cache_subgroups, 0);
    const inUse = Math.max(1, paths.filter((p) => p.subgroups > 0).length);
    return hostMemoryUse({
      gradientsBytes: gradientsSwapped ? 0 : gradientNode,
      gradients: gradientsSwapped ? "swapped" : "host",
      stateBytes: cached * stateBytes(setup, largest) * R,
      bufferCount: SWAP_BUFFER_COUNT,
      bufferBytes: buffersOf(inUse),
    }, available);
  };

  const zeroOffload = baselineOffload(input, computeS, available);
  const zeroInfinity = baselineInfinity(input, computeS, available, buffersOf(1));

  // busy seconds per uncached subgroup on each path, with contention when both are in use
  const tiers = input.remote ? [input.local, input.remote] : [input.local];
  const names = input.remote ? ["local", "remote"] : ["local"];
  const slow = tiers.map((t, i) => {
    const other = tiers[1 - i];
    if (!other) return { read: 1, write: 1 };
    return {
      read: Math.max(
        1,
        look(t.label, "read", other.label, "read"),
        look(t.label, "read", other.label, "write"),
      ),
      write: Math.max(
        1,
        look(t.label, "write", other.label, "read"),
        look(t.label, "write", other.label, "write"),
      ),
    };
  });
  const maxCached = Math.floor(cacheBytes / (stateBytes(setup, largest) * R));
  /** Each path's rates with `limits` readers and writers at once, and its costs per subgroup. */
  const ratesAt = (limits: readonly Limit[]) => {
    const at = tiers.map((t, i) => tierAt(t, limits[i]!.readers, limits[i]!.writers));
    // both paths in use: the pair's measured rates, reading and writing at once, where there are
    // some (the slowdowns then apply only to what one direction moves after the other is done),
    // scaled as the tier's mixed total at these counts is to that at 1
    const contended = at.map((t, i) => {
      const other = tiers[1 - i];
      const both = other && input.together?.(tiers[i]!.label, other.label);
      if (!both) return t;
      const one = tierAt(tiers[i]!, 1, 1);
      const scale = (mine: number | undefined, single: number | undefined, plain: number) =>
        mine !== undefined && single !== undefined ? mine / single : plain;
      return {
        ...t,
        mixedReadBw: both.readBw * slow[i]!.read *
          scale(t.mixedReadBw, one.mixedReadBw, t.readBw / one.readBw),
        mixedWriteBw: both.writeBw * slow[i]!.write *
          scale(t.mixedWriteBw, one.mixedWriteBw, t.writeBw / one.writeBw),
      };
    });
    const k = contended.map((t, i) =>
      pathSeconds({
        rates: ratesOf(t, "", slow[i]!.read, slow[i]!.write),
        readBytes: subgroupNode,
        writeBytes: subgroupNode,
      })
    );
    // reading a subgroup's gradients back in the update, node-wide, where they are swapped
    const g = contended.map((t, i) =>
      gradientsSwapped
        ? pathSeconds({
          rates: ratesOf(t, "", slow[i]!.read, slow[i]!.write),
          readBytes: setup.bytesPerState * avg * R,
          writeBytes: 0,
        })
        : 0
    );
    return { at, contended, k, g };
  };
  type Rates = ReturnType<typeof ratesAt>;

  // the breakdown (read, write, compute) from the closed form; the phase time and the paths'
  // busy times from the pipeline itself, simulated at the input's rates (the simulation runs
  // each path's readers and writers as the placement limits them)
  const simulated = (paths: PlannedPath[], p: Prediction, adamRate: number): Prediction =>
    withSimulation(
      { ...p, host_memory: memoryOf(paths) },
      simulatePlacement({ ...setup, adamParamsPerSec: adamRate }, paths, input, gradientsSwapped),
    );
  // Deep Optimizer States: the stride depends on the setup, not on the placement
  const dos = input.gpu ? bestStride(setup, S, avg, input.gpu) : undefined;
  highs ??= highsLoader();
  const solver = await highs;
  // one placement for per-subgroup costs `cost` with `limits`, its closed form, and its
  // simulation (none when it is `same`'s placement)
  const place = (
    limits: readonly Limit[],
    rates: Rates,
    cost: number[],
    same?: { paths: PlannedPath[] },
  ) => {
    const lp = buildLp({
      S,
      computeS,
      k: cost,
      g: rates.g,
      maxCached,
      capacity: tiers.map((t, i) => localOnly && i > 0 ? 0 : t.capacityBytes),
      subgroupNode,
    });
    const res = solver.solve(lp, {});
    if (res.Status !== "Optimal") {
      throw new RangeError(
        `no placement fits: the solver says ${res.Status} (check the tiers' capacities against ${
          (S * subgroupNode / 2 ** 30).toFixed(1)
        } GiB of optimizer state)`,
      );
    }
    const col = (name: string) =>
      Math.round((res.Columns as Record<string, { Primal: number }>)[name]?.Primal ?? 0);
    const n = tiers.map((_, i) => col(`n${i}`));
    const h = tiers.map((_, i) => col(`h${i}`));

    const paths: PlannedPath[] = tiers.map((t, i) => ({
      name: names[i]!,
      tier: t.label,
      subgroups: n[i]!,
      ratio: n[i]! / S,
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
    if (
      same?.paths.every((p, i) =>
        p.subgroups === paths[i]!.subgroups && p.cache_subgroups === paths[i]!.cache_subgroups
      )
    ) {
      return undefined;
    }
    const closed = closedOf(paths, rates);
    // Deep Optimizer States pays off when the closed form says the phase waits for compute
    const closedDos = dos && closedOf(paths, rates, dos.computeS);
    const dosStride = dos?.stride !== undefined && closedDos!.update_s < closed.update_s
      ? dos.stride
      : undefined;
    const plan = dosStride === undefined
      ? simulated(paths, closed, setup.adamParamsPerSec)
      : simulated(paths, closedDos!, setup.adamParamsPerSec * computeS / dos!.computeS);
    return { res, paths, closed, dosStride, plan, limits, rates };
  };
  // the closed form of a placement: each used path's uncached bytes at its rates
  function closedOf(
    paths: readonly PlannedPath[],
    rates: Rates,
    compute = computeS,
  ): Prediction {
    const used = paths.filter((p) => p.subgroups > 0);
    const loads = used.map((p) => {
      const i = names.indexOf(p.name);
      const t = rates.at[i]!;
      const moved = stateBytes(setup, avg) * (p.subgroups - p.cache_subgroups) * R;
      const gradients = gradientsSwapped ? setup.bytesPerState * avg * p.subgroups * R : 0;
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
  /** The placement with `limits`, refined once on the simulated busy times. */
  const placeWith = (limits: readonly Limit[]) => {
    const rates = ratesAt(limits);
    let best = place(limits, rates, rates.k)!;
    // the closed form misses the pipeline: cost each path as the simulation found it and ask
    // the solver again, keeping the faster of the two
    let refined: string | undefined;
    if (best.paths.length > 1 && best.paths.every((p) => p.subgroups > 0)) {
      const first = best;
      const found = (name: string) =>
        (first.plan.path_s?.[name] ?? 0) / (first.closed.path_s?.[name] ?? 0);
      const again = place(
        limits,
        rates,
        rates.k.map((c, i) => {
          const f = found(names[i]!);
          return Number.isFinite(f) && f > 0 ? c * f : c;
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
  };
  // readers and writers per path as part of the placement: one at a time (MLP-Offload's), all R
  // ranks, and the count where each curve peaks; without curves only one at a time, as before
  const candidates = limitCandidates(tiers, R);
  const tried = candidates.map((limits) => placeWith(limits));
  let best = tried[0]!;
  for (const t of tried.slice(1)) if (t.plan.update_s < best.plan.update_s - 1e-9) best = t;
  const { res, paths, dosStride, plan, refined } = best;
  const { k, contended } = best.rates;
  const busyOf = plan.path_s ?? {};
  // what each path moves while both run, reading and writing at once, for the why
  const rates = contended.map((t, i) => ({
    read: (t.mixedReadBw ?? t.readBw) / slow[i]!.read,
    write: (t.mixedWriteBw ?? t.writeBw) / slow[i]!.write,
  }));
  const why = explain(paths, tiers, k, rates, computeS, busyOf, maxCached, cacheBytes);
  why.push(...explainLimits(paths, tiers, R, best, tried));
  why.push(
    `ZeRO-Infinity costed with all ${R} ranks on ${input.local.label} at once: ${
      concurrentBandwidth(input.local, "read", R).basis
    }; ${concurrentBandwidth(input.local, "write", R).basis}`,
  );
  if (input.remote && tiers.some(hasCurve)) {
    why.push(
      `MLP-Offload's fixed ratio costed with one reader and one writer per path node-wide (its locks): ${
        tiers.map((t) =>
          `${t.label} ${gbps(concurrentBandwidth(t, "read", 1).total)} read, ${
            gbps(concurrentBandwidth(t, "write", 1).total)
          } write at 1`
        ).join("; ")
      }`,
    );
  }
  if (cacheBytes < input.hostCacheBytes) {
    why.push(
      `the host cache is cut from ${gb(input.hostCacheBytes)} to ${
        gb(cacheBytes)
      }: the pinned swap buffers (${gb(buffersOf(tierCount))}) leave no more of the ${
        gb(available)
      } of host memory available`,
    );
  }
  const mem = plan.host_memory!;
  why.push(
    gradientsSwapped
      ? `gradients swapped to the paths, as ZeRO-Infinity does, and read back in the update: keeping them needs ${
        gb(gradientNode)
      } of fp32 gradients (${setup.bytesPerState} B/param × ${R} ranks × ${
        (P / 1e9).toFixed(2)
      } G params) beside ${gb(cacheBytes)} of host cache and ${
        gb(buffersOf(tierCount))
      } of pinned swap buffers, ${
        gb(gradientNode + cacheBytes + buffersOf(tierCount))
      } in all, more than the ${gb(available)} of host memory available${reserveText(input)}`
      : `gradients kept in host memory (no gradient I/O): ${describeHostMemory(mem)}${
        reserveText(input)
      }`,
  );
  if (!mem.fits) {
    plan.feasible = false;
    plan.note = `the plan needs ${gb(mem.total_bytes)} of host memory, ${
      gb(mem.available_bytes)
    } is available${reserveText(input)}`;
  }
  if (refined) why.push(refined);
  if (dos) {
    if (dosStride !== undefined) {
      why.push(
        `Deep Optimizer States, one subgroup in ${dosStride} on the GPU: compute ${
          computeS.toFixed(2)
        } s → ${dos.computeS.toFixed(2)} s (CPU and GPU in parallel)`,
      );
    } else {
      why.push(
        dos.stride === undefined
          ? "no Deep Optimizer States stride: the GPU path is no faster than CPU Adam here"
          : `no Deep Optimizer States stride: one subgroup in ${dos.stride} on the GPU would cut compute to ${
            dos.computeS.toFixed(2)
          } s, but the phase waits for I/O, not for compute`,
      );
    }
  }
  const predictions: Solution["predictions"] = {
    zero_offload: zeroOffload,
    zero_infinity: zeroInfinity,
    plan,
  };
  if (input.remote) {
    // one reader and one writer per path, node-wide, as its locks allow
    const fixed = mlpOffloadPaths(paths, tiers, S, maxCached);
    const p = simulated(
      fixed,
      closedOf(fixed, ratesAt(tiers.map(() => ONE))),
      setup.adamParamsPerSec,
    );
    if (!p.host_memory!.fits) {
      p.feasible = false;
      p.note = `MLP-Offload's fixed ratio needs ${gb(p.host_memory!.total_bytes)} of host memory, ${
        gb(p.host_memory!.available_bytes)
      } is available`;
    }
    const over = fixed.find((f, i) => {
      const cap = tiers[i]!.capacityBytes;
      return cap !== undefined && f.subgroups > Math.floor(cap / subgroupNode);
    });
    predictions.mlp_offload = over
      ? {
        ...p,
        feasible: false,
        note:
          `MLP-Offload's fixed ratio puts ${over.subgroups} subgroups per rank on ${over.tier}, ` +
          `more than its capacity holds`,
      }
      : p;
  }
  return {
    paths,
    predictions,
    why,
    ...(dosStride !== undefined ? { dosStride } : {}),
    solver: { status: res.Status, seconds: (performance.now() - t0) / 1000, subgroups: S },
  };
}

/**
 * MLP-Offload as it runs by default (workloads/mlp_offload.ts): one subgroup
 * in three on the remote path, the last {@linkcode MLP_OFFLOAD_CACHE_SUBGROUPS}
 * of each path cached, as far as the host cache holds them (the local path's
 * first), one reader and one writer per path node-wide (its locks); `like`
 * gives the paths' tiers and request sizes, `tiers` their bandwidths.
 */
function mlpOffloadPaths(
  like: readonly PlannedPath[],
  tiers: readonly SolverTier[],
  subgroups: number,
  maxCached: number,
): PlannedPath[] {
  const remote = remoteSubgroups(subgroups, MLP_OFFLOAD_REMOTE_RATIO).filter(Boolean).length;
  const n = [subgroups - remote, remote];
  let room = maxCached;
  return like.map((p, i) => {
    const cached = Math.min(MLP_OFFLOAD_CACHE_SUBGROUPS, n[i]!, room);
    room -= cached;
    return {
      ...p,
      subgroups: n[i]!,
      ratio: n[i]! / subgroups,
      cache_subgroups: cached,
      readers: 1,
      writers: 1,
      concurrency_basis: [
        concurrentBandwidth(tiers[i]!, "read", 1).basis,
        concurrentBandwidth(tiers[i]!, "write", 1).basis,
      ],
    };
  });
}

/** Readers and writers of one path, node-wide. */
interface Limit {
  readonly readers: number;
  readonly writers: number;
}

/** One reader and one writer at a time. */
const ONE: Limit = { readers: 1, writers: 1 };

/**
 * `t` as the solver sees it with `readers` reading and `writers` writing at
 * once: each direction's total at those counts (solver/concurrency.ts), the
 * mixed totals where some figure gives them (not where the directions only
 * take turns), and no curve left to read.
 */
function tierAt(t: SolverTier, readers: number, writers: number): SolverTier {
  const { concurrency: _, mixedReadBw: _r, mixedWriteBw: _w, ...rest } = t;
  const mr = concurrentBandwidth(t, "read", readers, { mixed: true });
  const mw = concurrentBandwidth(t, "write", writers, { mixed: true });
  return {
    ...rest,
    readBw: concurrentBandwidth(t, "read", readers).total,
    writeBw: concurrentBandwidth(t, "write", writers).total,
    ...(!mr.turns && !mw.turns ? { mixedReadBw: mr.total, mixedWriteBw: mw.total } : {}),
  };
}

/**
 * The readers and writers per path the solver weighs: one at a time on every
 * path first (MLP-Offload's, and the only choice where no path has a curve:
 * the flat default gives every count the same total), then all `ranks` on
 * each path with a curve, then each direction at the count where its curve
 * peaks.
 */
function limitCandidates(tiers: readonly SolverTier[], ranks: number): Limit[][] {
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

/** Sentences: each path's readers and writers, their bandwidth at 1 and at R, and what the others would take. */
function explainLimits(
  paths: readonly PlannedPath[],
  tiers: readonly SolverTier[],
  ranks: number,
  chosen: { limits: readonly Limit[]; plan: Prediction },
  tried: readonly { limits: readonly Limit[]; plan: Prediction }[],
): string[] {
  const out: string[] = [];
  const count = (n: number, one: string) =>
    n === 1
      ? `one ${one} at a time`
      : n >= ranks
      ? `all ${n} ${one}s at once`
      : `${n} ${one}s at once`;
  paths.forEach((p, i) => {
    if (p.subgroups === 0) return;
    const t = tiers[i]!;
    const l = chosen.limits[i]!;
    if (!hasCurve(t)) {
      out.push(
        `${p.name} (${t.label}): ${count(l.readers, "reader")}, ${
          count(l.writers, "writer")
        } (MLP-Offload's): ${FLAT_CONCURRENCY_NOTE}`,
      );
      return;
    }
    const fig = (d: "read" | "write", n: number) => {
      const b = concurrentBandwidth(t, d, n);
      return `${gbps(b.total)}${n > 1 ? ` in all (${gbps(b.perProcess)} each)` : ""}`;
    };
    const others = tried.filter((x) => x !== chosen).map((x) =>
      `${x.plan.update_s.toFixed(2)} s with ${
        x.limits.map((m, j) => `${paths[j]!.name} ${m.readers}×${m.writers}`).join(", ")
      }`
    );
    out.push(
      `${p.name} (${t.label}): ${count(l.readers, "reader")}, ${
        count(l.writers, "writer")
      } — read ${fig("read", 1)} at 1 against ${fig("read", ranks)} at ${ranks}, write ${
        fig("write", 1)
      } at 1 against ${fig("write", ranks)} at ${ranks} (${
        concurrentBandwidth(t, "read", l.readers).source
      }); the update ${chosen.plan.update_s.toFixed(2)} s${
        others.length > 0 ? ` against ${others.join(", ")}` : ""
      }`,
    );
  });
  return out;
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

/** A tier's rates for the model, named and slowed. */
function ratesOf(
  t: SolverTier,
  name: string,
  readSlowdown: number,
  writeSlowdown: number,
): PathRates {
  return {
    name,
    readBw: t.readBw,
    writeBw: t.writeBw,
    readSlowdown,
    writeSlowdown,
    ...(t.mixedReadBw !== undefined ? { mixedReadBw: t.mixedReadBw } : {}),
    ...(t.mixedWriteBw !== undefined ? { mixedWriteBw: t.mixedWriteBw } : {}),
  };
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
function withSimulation(closed: Prediction, sim: SimulatedUpdate): Prediction {
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

/** ", the node's N GiB less a reserve of M GiB" where a reserve is set. */
function reserveText(input: SolveInput): string {
  if (input.hostMemoryBytes === undefined) return "";
  const reserve = input.hostReserveBytes ?? 0;
  return ` (the node's ${(input.hostMemoryBytes / 2 ** 30).toFixed(1)} GiB less ${
    (reserve / 2 ** 30).toFixed(1)
  } GiB reserved)`;
}

/** ZeRO-Offload: every state in host memory, no I/O; feasible when it fits. */
function baselineOffload(input: SolveInput, computeS: number, available: number): Prediction {
  const s = input.setup;
  const P = shardParameters(s);
  const R = s.ranksPerNode;
  // fp32 params, m, v and gradients of every rank
  const host_memory = hostMemoryUse({
    gradientsBytes: s.bytesPerState * P * R,
    gradients: "host",
    stateBytes: 3 * s.bytesPerState * P * R,
    bufferCount: 0,
    bufferBytes: 0,
  }, available);
  const p = { ...predictPhase({ paths: [], computeS }), host_memory };
  if (!host_memory.fits) {
    return {
      ...p,
      feasible: false,
      note: `needs ${
        (host_memory.total_bytes / 2 ** 30).toFixed(0)
      } GiB of host memory for the optimizer state and gradients, ${
        (available / 2 ** 30).toFixed(0)
      } GiB is available${reserveText(input)}`,
    };
  }
  return p;
}

/**
 * ZeRO-Infinity: every subgroup on the node-local path, gradients too, all
 * ranks at once: the path at its total with R processes reading and R
 * writing (each rank's share the total at R over R), as the simulation runs
 * it.
 */
function baselineInfinity(
  input: SolveInput,
  computeS: number,
  available: number,
  buffers: number,
): Prediction {
  const s = input.setup;
  const P = shardParameters(s);
  const R = s.ranksPerNode;
  const t = input.local;
  const closed = predictPhase({
    paths: [{
      rates: ratesOf(tierAt(t, R, R), "local", 1, 1),
      readBytes: 4 * s.bytesPerState * P * R,
      writeBytes: 3 * s.bytesPerState * P * R,
    }],
    computeS,
  });
  const host_memory = hostMemoryUse({
    gradientsBytes: 0,
    gradients: "swapped",
    stateBytes: 0,
    bufferCount: SWAP_BUFFER_COUNT,
    bufferBytes: buffers,
  }, available);
  const p = withSimulation({ ...closed, host_memory }, simulateInfinity(s, { local: t }));
  if (!host_memory.fits) {
    return {
      ...p,
      feasible: false,
      note: `its pinned swap buffers need ${(buffers / 2 ** 30).toFixed(1)} GiB of host memory, ${
        (available / 2 ** 30).toFixed(1)
      } GiB is available${reserveText(input)}`,
    };
  }
  const need = 4 * s.bytesPerState * P * R;
  if (t.capacityBytes !== undefined && need > t.capacityBytes) {
    return {
      ...p,
      feasible: false,
      note: `needs ${(need / 2 ** 30).toFixed(0)} GiB on ${t.label}, it has ${
        (t.capacityBytes / 2 ** 30).toFixed(0)
      } GiB`,
    };
  }
  return p;
}

function gbps(x: number): string {
  return `${(x / 1e9).toFixed(2)} GB/s`;
}

/** Sentences that say why the plan is what it is. */
function explain(
  paths: PlannedPath[],
  tiers: SolverTier[],
  k: number[],
  rates: { read: number; write: number }[],
  computeS: number,
  busyOf: Record<string, number>,
  maxCached: number,
  cacheBytes: number,
): string[] {
  const out: string[] = [];
  const used = paths.filter((p) => p.subgroups > 0);
  const busy = used.map((p) => busyOf[p.name] ?? 0);
  const longest = Math.max(0, ...busy);
  if (computeS >= longest) {
    out.push(
      `compute-bound: CPU Adam takes ${computeS.toFixed(2)} s per rank; the paths are busy ${
        used.map((p, i) => `${p.name} ${busy[i]!.toFixed(2)} s`).join(", ")
      }, hidden under it`,
    );
  } else {
    const p = used[busy.indexOf(longest)]!;
    out.push(
      `I/O-bound on ${p.name} (${p.tier}): ${longest.toFixed(2)} s of reads and writes against ${
        computeS.toFixed(2)
      } s of CPU Adam`,
    );
  }
  const cost = (i: number) =>
    `${k[i]!.toFixed(3)} s a subgroup on ${tiers[i]!.label} (read ${gbps(rates[i]!.read)}, write ${
      gbps(rates[i]!.write)
    }, contention included)`;
  if (paths.length > 1 && used.length > 1) {
    const [a, b] = paths as [PlannedPath, PlannedPath];
    out.push(
      `split ${a.subgroups}:${b.subgroups} between ${a.tier} and ${b.tier} to even their busy times: ${
        cost(0)
      } against ${cost(1)}`,
    );
  } else if (paths.length > 1) {
    const unused = paths.findIndex((p) => p.subgroups === 0);
    const other = 1 - unused;
    out.push(
      `everything on ${paths[other]!.tier}: ${cost(unused)} would lengthen the phase beyond ${
        cost(other)
      }`,
    );
  }
  const cached = paths.reduce((t, p) => t + p.cache_subgroups, 0);
  out.push(
    cached >= maxCached
      ? `the host cache is the binding limit: ${cached} subgroups per rank fit in ${
        (cacheBytes / 2 ** 30).toFixed(0)
      } GiB; more would cut I/O further`
      : `${cached} subgroups per rank cached in host memory (room for ${maxCached})`,
  );
  return out;
}
