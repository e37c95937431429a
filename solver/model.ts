/**
 * The closed-form model: how long the update phase of one iteration takes
 * for a placement of the optimizer state, from bandwidths alone — the same
 * pipeline the workloads run (workloads/zero_infinity.ts, mlp_offload.ts),
 * summed up. The solver chooses its split on it and reports its breakdown
 * (read, write, compute); the phase time a plan predicts comes from
 * stepping through the pipeline itself (solver/simulate.ts), which this
 * bounds from below.
 *
 * Per node and iteration, with R ranks each owning P parameters in
 * subgroups, s bytes per state:
 *
 * - compute: C = P / (CPU Adam rate of a rank); ranks compute in parallel.
 * - a path p moves its reads and writes through one device, the bytes summed
 *   over all ranks (the profile measured each tier node-wide), each direction
 *   slowed by the contention matrix's factor for the other paths in use (1
 *   where unmeasured). Where the profile measured the tier reading and
 *   writing at once (its mixed bandwidths), both directions run together at
 *   those rates until the shorter is done, the rest at its own rate alone;
 *   where it did not, reads and writes add: t_p = R / read bw + W / write bw.
 * - paths and compute run at once (prefetch and write-behind), so the phase
 *   takes the longest of them. What the pipeline cannot hide (its fill and
 *   drain, one path waiting on the other) is the simulation's to find.
 *
 * The model ignores per-request latency (the bandwidths were measured at the
 * block size and depth the plan uses). The bandwidths it is given are a
 * tier's totals at the number of ranks that use it at once (the path's
 * readers and writers, R for ZeRO-Infinity): solver/concurrency.ts reads
 * them off the profile's concurrency curves, or gives the tier's one figure
 * whatever the count where it has none.
 *
 * @module
 */

import type { Prediction } from "../schema/plan.ts";

/** A tier as the model sees it. */
export interface PathRates {
  /** The path name used in byte keys (`local`, `remote`). */
  readonly name: string;
  /** Node-wide bandwidths, bytes/s. */
  readonly readBw: number;
  readonly writeBw: number;
  /** Contention factors (≥ 1) while the other paths in use run. */
  readonly readSlowdown?: number;
  readonly writeSlowdown?: number;
  /** Bandwidths of each direction while the tier reads and writes at once, bytes/s. */
  readonly mixedReadBw?: number;
  readonly mixedWriteBw?: number;
}

/** What one path carries per iteration, node-wide (all ranks). */
export interface PathLoad {
  readonly rates: PathRates;
  readonly readBytes: number;
  readonly writeBytes: number;
}

/** What the model needs of the pipeline. */
export interface PhaseInput {
  readonly paths: readonly PathLoad[];
  /** CPU (or GPU) compute of one rank for the whole phase, s. */
  readonly computeS: number;
}

/**
 * Busy time of a path, s.
 *
 * @example
 * ```ts
 * import { pathSeconds } from "./model.ts";
 * const rates = { name: "local", readBw: 2e9, writeBw: 2e9 };
 * console.assert(pathSeconds({ rates, readBytes: 2e9, writeBytes: 2e9 }) === 2);
 * const mixed = { ...rates, mixedReadBw: 1.5e9, mixedWriteBw: 1.5e9 };
 * console.assert(Math.abs(pathSeconds({ rates: mixed, readBytes: 3e9, writeBytes: 3e9 }) - 2) < 1e-12);
 * ```
 */
export function pathSeconds(load: PathLoad): number {
  const r = load.rates;
  const rs = r.readSlowdown ?? 1, ws = r.writeSlowdown ?? 1;
  const read = load.readBytes === 0 ? 0 : (load.readBytes / r.readBw) * rs;
  const write = load.writeBytes === 0 ? 0 : (load.writeBytes / r.writeBw) * ws;
  if (read === 0 || write === 0 || !r.mixedReadBw || !r.mixedWriteBw) return read + write;
  // together at the mixed rates until the shorter direction is done, then the rest alone
  const tr = (load.readBytes / r.mixedReadBw) * rs;
  const tw = (load.writeBytes / r.mixedWriteBw) * ws;
  const both = Math.min(tr, tw);
  const rest = tr > tw
    ? ((load.readBytes - (both / rs) * r.mixedReadBw) / r.readBw) * rs
    : ((load.writeBytes - (both / ws) * r.mixedWriteBw) / r.writeBw) * ws;
  return both + rest;
}

/**
 * The predicted update phase: the longest of compute and each path's busy
 * time.
 *
 * @example
 * ```ts
 * import { predictPhase } from "./model.ts";
 * const p = predictPhase({
 *   paths: [{ rates: { name: "local", readBw: 1e9, writeBw: 1e9 }, readBytes: 2e9, writeBytes: 1e9 }],
 *   computeS: 1,
 * });
 * console.assert(Math.abs(p.update_s - 3) < 1e-9);
 * ```
 */
export function predictPhase(input: PhaseInput): Prediction {
  let read = 0, write = 0, longest = 0;
  const bytes: Record<string, number> = {};
  const pathS: Record<string, number> = {};
  for (const load of input.paths) {
    const r = load.rates;
    read += load.readBytes === 0 ? 0 : (load.readBytes / r.readBw) * (r.readSlowdown ?? 1);
    write += load.writeBytes === 0 ? 0 : (load.writeBytes / r.writeBw) * (r.writeSlowdown ?? 1);
    const busy = pathSeconds(load);
    longest = Math.max(longest, busy);
    if (busy > 0) pathS[r.name] = (pathS[r.name] ?? 0) + busy;
    if (load.readBytes > 0) {
      bytes[`${r.name}:read`] = (bytes[`${r.name}:read`] ?? 0) + load.readBytes;
    }
    if (load.writeBytes > 0) {
      bytes[`${r.name}:write`] = (bytes[`${r.name}:write`] ?? 0) + load.writeBytes;
    }
  }
  const update = Math.max(input.computeS, longest);
  return {
    update_s: update,
    read_s: read,
    write_s: write,
    compute_s: input.computeS,
    overlap_s: Math.max(0, read + write + input.computeS - update),
    bytes,
    path_s: pathS,
    feasible: true,
  };
}
