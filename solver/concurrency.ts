/**
 * A tier's bandwidth as a function of how many processes (ranks) hit it at
 * once, from the profile's concurrency curves (schema/profile.ts,
 * `ProfileTier.concurrency`): what the solver costs ZeRO-Infinity with (R
 * ranks at once), MLP-Offload with (one reader and one writer node-wide),
 * and the plan's readers and writers per path with.
 *
 * For a tier, a direction, n processes and a request size:
 *
 * - the curve at the request size, else at the nearest one (by ratio; the
 *   answer says so);
 * - at a measured process count, its total; between two, the total
 *   interpolated linearly in n; past the curve's last count, that count's
 *   total held (no growth assumed past what was seen; the answer says so);
 *   below its first count, the first count's total;
 * - reading and writing at once (n reading while n others write): the
 *   curve's mixed figures where it has them; else the tier's own mixed
 *   figures (one job each way), scaled by how the curve's plain total at n
 *   compares with its total at 1; else reads and writes taking turns, half
 *   the plain total each (as the closed form adds their times);
 * - without a curve, {@linkcode FLAT_CONCURRENCY_NOTE}: the tier's one
 *   figure is the total whatever n is.
 *
 * Every answer carries its basis, one sentence for the plan's "why".
 *
 * @module
 */

import {
  type ConcurrencyPoint,
  type Direction,
  FLAT_CONCURRENCY_NOTE,
  type ProfileConcurrency,
} from "../schema/profile.ts";
import type { SolverTier } from "./solver_tier.ts";

/** A tier's bandwidth at some number of processes at once, bytes/s. */
export interface ConcurrentBandwidth {
  /** All `processes` together. */
  readonly total: number;
  /** What each gets: total / processes. */
  readonly perProcess: number;
  readonly processes: number;
  /**
   * Reading and writing at once with no mixed figure anywhere: `total` is
   * half the plain total (the two directions take turns).
   */
  readonly turns?: true;
  /** Where the figure came from: the curve and how it was read, or the flat default. */
  readonly source: string;
  /** One sentence: the tier, direction, processes, figures and `source`. */
  readonly basis: string;
}

/** The tier fields the lookup reads (a {@linkcode SolverTier} has them all). */
export type ConcurrencyTier = Pick<
  SolverTier,
  "label" | "readBw" | "writeBw" | "mixedReadBw" | "mixedWriteBw" | "bs" | "concurrency"
>;

/** Options of {@linkcode concurrentBandwidth}. */
export interface ConcurrencyOptions {
  /** Reading and writing at once: `processes` read while `processes` others write. */
  readonly mixed?: boolean;
  /** Request size the processes issue, bytes (default: the tier's `bs`). */
  readonly bs?: number;
}

function gbps(x: number): string {
  return `${(x / 1e9).toFixed(2)} GB/s`;
}

/** A size in bytes as KiB or MiB, for sentences. */
function size(bytes: number): string {
  return bytes >= 1 << 20 && bytes % (1 << 20) === 0
    ? `${bytes / (1 << 20)} MiB`
    : bytes % 1024 === 0
    ? `${bytes / 1024} KiB`
    : `${bytes} B`;
}

/** The curve nearest `bs` (by ratio; the smaller request size on a tie), if the tier has any. */
export function nearestCurve(
  curves: readonly ProfileConcurrency[] | undefined,
  bs: number,
): ProfileConcurrency | undefined {
  let best: ProfileConcurrency | undefined;
  let distance = Infinity;
  for (const c of curves ?? []) {
    if (c.points.length === 0) continue;
    const d = Math.abs(Math.log(c.bs / bs));
    if (d < distance - 1e-12 || (Math.abs(d - distance) <= 1e-12 && best && c.bs < best.bs)) {
      [best, distance] = [c, d];
    }
  }
  return best;
}

/** The total a point gives, or undefined where it lacks the figure. */
type Figure = (p: ConcurrencyPoint) => number | undefined;

/** `n` on the curve's points that have `figure`: measured, interpolated or held. */
function along(
  points: readonly ConcurrencyPoint[],
  figure: Figure,
  n: number,
): { total: number; how: string } | undefined {
  const have = points
    .filter((p) => figure(p) !== undefined)
    .sort((a, b) => a.processes - b.processes);
  if (have.length === 0) return undefined;
  const first = have[0]!, last = have[have.length - 1]!;
  if (n <= first.processes) {
    return {
      total: figure(first)!,
      how: n === first.processes
        ? `measured at ${n}`
        : `the curve's first point (${first.processes}) held below it`,
    };
  }
  if (n >= last.processes) {
    return {
      total: figure(last)!,
      how: n === last.processes
        ? `measured at ${n}`
        : `held from ${last.processes} processes, the curve's last point`,
    };
  }
  const hi = have.findIndex((p) => p.processes >= n);
  const b = have[hi]!, a = have[hi - 1]!;
  if (b.processes === n) return { total: figure(b)!, how: `measured at ${n}` };
  const f = (n - a.processes) / (b.processes - a.processes);
  return {
    total: figure(a)! + f * (figure(b)! - figure(a)!),
    how: `interpolated between ${a.processes} and ${b.processes}`,
  };
}

/**
 * The bandwidth of `tier` doing `direction` with `processes` processes at
 * once (see the module's rules), with its basis.
 *
 * @throws {RangeError} when `processes` is not a number ≥ 1.
 *
 * @example
 * ```ts
 * import { concurrentBandwidth } from "./concurrency.ts";
 * const flat = { label: "file", readBw: 2e9, writeBw: 1e9, bs: 1 << 20 };
 * const tier = {
 *   ...flat,
 *   concurrency: [{ basis: "stated" as const, bs: 1 << 20, iodepth: 8, points: [
 *     { processes: 1, read_bw_bytes: 2e9, write_bw_bytes: 1e9 },
 *     { processes: 4, read_bw_bytes: 1.2e9, write_bw_bytes: 0.6e9 },
 *   ] }],
 * };
 * const at4 = concurrentBandwidth(tier, "read", 4);
 * console.assert(at4.total === 1.2e9 && at4.perProcess === 0.3e9);
 * console.assert(concurrentBandwidth(tier, "read", 8).total === 1.2e9); // held past the curve
 * console.assert(concurrentBandwidth(flat, "read", 4).total === 2e9); // no curve: flat
 * ```
 */
export function concurrentBandwidth(
  tier: ConcurrencyTier,
  direction: Direction,
  processes: number,
  opts: ConcurrencyOptions = {},
): ConcurrentBandwidth {
  if (!(Number.isFinite(processes) && processes >= 1)) {
    throw new RangeError(`processes must be a number ≥ 1, got ${processes}`);
  }
  const n = processes;
  const mixed = opts.mixed ?? false;
  const bs = opts.bs ?? tier.bs;
  const plainOf: Figure = (p) => direction === "read" ? p.read_bw_bytes : p.write_bw_bytes;
  const mixedOf: Figure = (p) =>
    p.mixed_read_bw_bytes !== undefined && p.mixed_write_bw_bytes !== undefined
      ? (direction === "read" ? p.mixed_read_bw_bytes : p.mixed_write_bw_bytes)
      : undefined;
  const tierPlain = direction === "read" ? tier.readBw : tier.writeBw;
  const tierMixed = tier.mixedReadBw !== undefined && tier.mixedWriteBw !== undefined
    ? (direction === "read" ? tier.mixedReadBw : tier.mixedWriteBw)
    : undefined;
  const what = !mixed
    ? `${tier.label} ${direction}`
    : `${tier.label} ${direction === "read" ? "reading while writing" : "writing while reading"}`;
  const answer = (total: number, basis: string, turns = false): ConcurrentBandwidth => ({
    total,
    perProcess: total / n,
    processes: n,
    ...(turns ? { turns: true as const } : {}),
    source: basis,
    basis: `${what} at ${n} process${n === 1 ? "" : "es"}: ${gbps(total)} in all, ${
      gbps(total / n)
    } each (${basis})`,
  });

  const curve = nearestCurve(tier.concurrency, bs);
  if (!curve) {
    if (!mixed) return answer(tierPlain, FLAT_CONCURRENCY_NOTE);
    return tierMixed !== undefined
      ? answer(tierMixed, `${FLAT_CONCURRENCY_NOTE}; the tier's mixed figure`)
      : answer(
        tierPlain / 2,
        `${FLAT_CONCURRENCY_NOTE}; no mixed figure: reads and writes take turns, half each`,
        true,
      );
  }
  const which = curve.bs === bs
    ? `${curve.basis} curve at ${size(curve.bs)}`
    : `${curve.basis} curve at ${size(curve.bs)}, the nearest to the ${size(bs)} requests`;
  const plain = along(curve.points, plainOf, n)!;
  if (!mixed) return answer(plain.total, `${which}, ${plain.how}`);
  const both = along(curve.points, mixedOf, n);
  if (both) return answer(both.total, `${which}, mixed, ${both.how}`);
  const one = along(curve.points, plainOf, 1)!.total;
  const scale = one > 0 ? plain.total / one : 1;
  if (tierMixed !== undefined) {
    return answer(
      tierMixed * scale,
      `${which} has no mixed figures: the tier's mixed figure × ${
        scale.toFixed(2)
      } (the plain total at ${n} over that at 1, ${plain.how})`,
    );
  }
  return answer(
    plain.total / 2,
    `${which}, ${plain.how}; no mixed figure: reads and writes take turns, half each`,
    true,
  );
}

/** Whether `tier` has a concurrency curve (else {@linkcode FLAT_CONCURRENCY_NOTE} holds). */
export function hasCurve(tier: ConcurrencyTier): boolean {
  return nearestCurve(tier.concurrency, tier.bs) !== undefined;
}

/**
 * The processes in 1…`max` at which `tier`'s total in `direction` is
 * highest (the fewest on a tie, within 1 %).
 */
export function bestProcesses(
  tier: ConcurrencyTier,
  direction: Direction,
  max: number,
  opts: ConcurrencyOptions = {},
): number {
  let best = 1;
  let top = concurrentBandwidth(tier, direction, 1, opts).total;
  for (let n = 2; n <= max; n++) {
    const t = concurrentBandwidth(tier, direction, n, opts).total;
    if (t > top * 1.01) [best, top] = [n, t];
  }
  return best;
}
