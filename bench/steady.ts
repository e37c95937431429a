/**
 * Steady state, as fio's `ss=bw_slope`: the least-squares slope of the last
 * few bandwidth samples, as a percentage of their mean, per second, is at
 * most a limit. `sweep --steady` runs a point until it holds (one-second
 * samples, fio's); `bench` stops each point once it holds on quarter-second
 * samples, so a device that holds still is measured for one second and one
 * that does not for its whole `--runtime`.
 *
 * @module
 */

import type { RunProgress } from "./runner.ts";

/** A steady-state criterion: `window` samples of `sampleMs` each, slope at most `limitPct` %/s. */
export interface SteadyCriterion {
  /** Length of one bandwidth sample, ms. */
  readonly sampleMs: number;
  /** Samples in the slope window. */
  readonly window: number;
  /** `bw_slope` limit, % of the mean per second. */
  readonly limitPct: number;
}

/**
 * `bench`'s criterion: fio's bw_slope at sweep's 2 %/s, over the last second
 * of quarter-second samples (so a point measures one second at least).
 */
export const BENCH_STEADY: SteadyCriterion = { sampleMs: 250, window: 4, limitPct: 2 };

/**
 * The criterion in words, as result documents state it.
 *
 * @example
 * ```ts
 * import { BENCH_STEADY, describeSteady } from "./steady.ts";
 * console.assert(describeSteady(BENCH_STEADY).startsWith("bw_slope ≤ 2 %/s"));
 * ```
 */
export function describeSteady(c: SteadyCriterion): string {
  const span = (c.window * c.sampleMs) / 1000;
  return `bw_slope ≤ ${c.limitPct} %/s of the mean over the last ${span} s ` +
    `(${c.window} samples of ${c.sampleMs} ms)`;
}

/**
 * The least-squares slope of `samples` (one every `sampleS` seconds) as a
 * percentage of their mean, per second: fio's `bw_slope` with its `%` form.
 * Infinity when the mean is 0 or there are fewer than two samples.
 *
 * @example
 * ```ts
 * import { bwSlopePct } from "./steady.ts";
 * console.assert(bwSlopePct([100, 100, 100]) === 0);
 * console.assert(Math.abs(bwSlopePct([90, 100, 110]) - 10) < 1e-9);
 * console.assert(Math.abs(bwSlopePct([90, 100, 110], 0.5) - 20) < 1e-9);
 * ```
 */
export function bwSlopePct(samples: readonly number[], sampleS = 1): number {
  const n = samples.length;
  if (n < 2) return Infinity;
  const mean = samples.reduce((a, b) => a + b, 0) / n;
  if (!(mean > 0)) return Infinity;
  const xbar = (n - 1) / 2;
  let sxx = 0, sxy = 0;
  for (const [x, y] of samples.entries()) {
    sxx += (x - xbar) ** 2;
    sxy += (x - xbar) * (y - mean);
  }
  return Math.abs(sxy / sxx) / mean * 100 / sampleS;
}

/**
 * Whether the last `window` samples (one every `sampleS` seconds) pass the slope test.
 *
 * @example
 * ```ts
 * import { isSteady } from "./steady.ts";
 * console.assert(isSteady([50, 100, 101, 100], 3, 2) && !isSteady([50, 100, 101, 100], 4, 2));
 * ```
 */
export function isSteady(
  samples: readonly number[],
  window: number,
  limitPct: number,
  sampleS = 1,
): boolean {
  return samples.length >= window && bwSlopePct(samples.slice(-window), sampleS) <= limitPct;
}

/** Bandwidth samples of one run, taken from its progress reports (about every 100 ms). */
export class SteadyWatch {
  readonly samples: number[] = [];
  readonly #sampleMs: number;
  #last: { t: number; bytes: number } | undefined;

  constructor(sampleMs = 1000) {
    this.#sampleMs = sampleMs;
  }

  /** Takes a progress report; whether it completed a sample. */
  see(p: RunProgress): boolean {
    if (p.phase !== "measure") return false;
    const bytes = p.readBytes + p.writeBytes;
    if (!this.#last) {
      this.#last = { t: p.elapsedMs, bytes };
      return false;
    }
    const dt = p.elapsedMs - this.#last.t;
    if (dt < this.#sampleMs) return false;
    this.samples.push((bytes - this.#last.bytes) / (dt / 1000));
    this.#last = { t: p.elapsedMs, bytes };
    return true;
  }

  /** Whether the samples so far pass `c`. */
  steady(c: SteadyCriterion): boolean {
    return isSteady(this.samples, c.window, c.limitPct, c.sampleMs / 1000);
  }
}

/**
 * Stops one run, or a group's runs started together, once every one of them
 * is steady: `signal` is the runs' stonewall (runner.ts), which ends them as
 * complete runs of the time they measured. Without a criterion it never
 * fires, and the runs measure their whole runtime.
 */
export class SteadyStop {
  readonly #criterion: SteadyCriterion | undefined;
  readonly #watches: SteadyWatch[];
  readonly #stop = new AbortController();

  constructor(criterion: SteadyCriterion | undefined, members = 1) {
    this.#criterion = criterion;
    this.#watches = Array.from({ length: members }, () => new SteadyWatch(criterion?.sampleMs));
  }

  /** Aborted once every member is steady. */
  get signal(): AbortSignal {
    return this.#stop.signal;
  }

  /** Whether the runs were stopped because they were steady. */
  get reached(): boolean {
    return this.#stop.signal.aborted;
  }

  /** Takes member `k`'s progress report. */
  see(k: number, p: RunProgress): void {
    const c = this.#criterion;
    if (!c || this.reached || !this.#watches[k]!.see(p)) return;
    if (this.#watches.every((w) => w.steady(c))) this.#stop.abort("steady state");
  }

  /** Each member's bandwidth samples so far (bytes/s, one per `sampleMs`; none without a criterion). */
  samples(): number[][] {
    return this.#criterion ? this.#watches.map((w) => [...w.samples]) : [];
  }

  /** What a run's `steady` field says: the criterion and whether it held; undefined without one. */
  result(): { criterion: string; reached: boolean } | undefined {
    const c = this.#criterion;
    return c && { criterion: describeSteady(c), reached: this.reached };
  }
}

/**
 * The mean of `samples` and its standard error (the samples' standard
 * deviation over √n); an error of 0 with fewer than two samples.
 *
 * @example
 * ```ts
 * import { meanAndError } from "./steady.ts";
 * const { mean, error } = meanAndError([90, 110, 90, 110]);
 * console.assert(mean === 100 && Math.abs(error - 5.7735) < 1e-3);
 * ```
 */
export function meanAndError(samples: readonly number[]): { mean: number; error: number } {
  const n = samples.length;
  if (n === 0) return { mean: 0, error: 0 };
  const mean = samples.reduce((a, b) => a + b, 0) / n;
  if (n < 2) return { mean, error: 0 };
  const variance = samples.reduce((t, x) => t + (x - mean) ** 2, 0) / (n - 1);
  return { mean, error: Math.sqrt(variance / n) };
}
