/**
 * A latency recorder for the per-request hot path: the very buckets of
 * {@linkcode newHistogram}'s HDR histogram (3 significant digits, unit 1 ns),
 * counted in a preallocated array with integer arithmetic, then folded into
 * the HDR histogram in one go.
 *
 * hdr-histogram-js finds a value's bucket with `Math.log2`, `Math.pow` and
 * `Math.floor` (libm calls, ~100 ns a value); here it is `Math.clz32` and two
 * shifts. Nothing is lost: a value lands in the bucket HDR would give it, so
 * counts, percentiles, mean and standard deviation come out identical, and
 * the exact minimum and maximum are kept aside and recorded as themselves.
 * Values of 2^32 ns (4.3 s) or more are kept as they are and recorded at the
 * fold.
 *
 * @module
 */

import type { Histogram } from "./recorder.ts";

/** log2 of half the sub-buckets of a 3-significant-digit HDR histogram (1024). */
const SUB_HALF_MAGNITUDE = 10;
const SUB_HALF = 1 << SUB_HALF_MAGNITUDE;
/** Values below this fit a 32-bit integer and are counted here. */
const LIMIT = 2 ** 32;
/** Buckets 0 … 21 cover 1 … 2^32 − 1: (21 + 1) × 1024 + 1024 counts. */
const LENGTH = (32 - SUB_HALF_MAGNITUDE + 1) * SUB_HALF;

/** The index HDR gives integer `v` (1 ≤ v < 2^32) in its counts array. */
function indexOf(v: number): number {
  // bucket = max(⌊log2 v⌋ − 10, 0); the mask 2047 maps v < 2048 to bucket 0.
  const bucket = 21 - Math.clz32(v | 2047);
  return (bucket << SUB_HALF_MAGNITUDE) + (v >>> bucket);
}

/** The lowest value of the counts array's index `i` (HDR's valueFromIndex). */
function valueOf(i: number): number {
  let bucket = (i >> SUB_HALF_MAGNITUDE) - 1;
  let sub = (i & (SUB_HALF - 1)) + SUB_HALF;
  if (bucket < 0) {
    sub -= SUB_HALF;
    bucket = 0;
  }
  return sub * 2 ** bucket;
}

/**
 * Latencies counted in HDR's buckets, for {@linkcode LatencyBuckets.foldInto}
 * an HDR histogram once the hot loop is over.
 *
 * @example
 * ```ts
 * import { LatencyBuckets } from "./latency_buckets.ts";
 * import { newHistogram } from "./recorder.ts";
 * const h = newHistogram();
 * const b = new LatencyBuckets(h);
 * b.record(1500);
 * b.record(123_456);
 * b.foldInto();
 * console.assert(h.totalCount === 2 && h.minNonZeroValue === 1500 && h.maxValue === 123_456);
 * ```
 */
export class LatencyBuckets {
  readonly #into: Histogram;
  /** Allocated at the first value (184 KiB): a histogram an engine never uses costs nothing. */
  #counts: Float64Array | undefined;
  #n = 0;
  #min = LIMIT;
  #max = 0;
  /** Values of 2^32 ns or more since the last fold (rare: a request of over 4.3 s). */
  #over: number[] | undefined;

  /** Buckets that fold into `into` (a histogram of {@linkcode newHistogram}). */
  constructor(into: Histogram) {
    this.#into = into;
  }

  /** Counts one latency in whole ns (an integer ≥ 1). */
  record(ns: number): void {
    if (ns >= LIMIT) {
      (this.#over ??= []).push(ns);
      return;
    }
    const c = this.#counts ??= new Float64Array(LENGTH);
    c[indexOf(ns)]! += 1;
    this.#n++;
    if (ns < this.#min) this.#min = ns;
    if (ns > this.#max) this.#max = ns;
  }

  /** Values counted since the last fold. */
  get count(): number {
    return this.#n + (this.#over?.length ?? 0);
  }

  /**
   * Adds what was counted to the HDR histogram and starts afresh: each
   * bucket's count at its lowest value, except one count each for the
   * minimum and the maximum, recorded as the values they were. What it adds
   * is also appended to `sink`, when given, as `value, count` pairs: the
   * samples of this fold alone, sparse (a logging interval's, say).
   */
  foldInto(sink?: number[]): void {
    const over = this.#over;
    if (over !== undefined && over.length > 0) {
      for (const v of over) {
        this.#into.recordValue(v);
        sink?.push(v, 1);
      }
      over.length = 0;
    }
    const c = this.#counts;
    if (this.#n === 0 || c === undefined) return;
    const h = this.#into;
    // Every count lies from the minimum's bucket to the maximum's: only those are read.
    const lo = indexOf(this.#min);
    const hi = indexOf(this.#max);
    c[lo]! -= 1;
    h.recordValue(this.#min);
    sink?.push(this.#min, 1);
    if (this.#n > 1) {
      c[hi]! -= 1;
      h.recordValue(this.#max);
      sink?.push(this.#max, 1);
    }
    for (let i = lo; i <= hi; i++) {
      const n = c[i]!;
      if (n > 0) {
        // The minimum's bucket at the minimum: the same bucket, and the histogram's least value
        // stays the minimum (its lowest value may lie below it, as 4992 below 4993).
        const v = i === lo ? this.#min : valueOf(i);
        h.recordValueWithCount(v, n);
        sink?.push(v, n);
      }
    }
    c.fill(0, lo, hi + 1);
    this.#n = 0;
    this.#min = LIMIT;
    this.#max = 0;
  }
}
