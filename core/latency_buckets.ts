/**
 * A latency recorder for the per-request hot path: the very buckets of
 * `newHistogram`'s HDR histogram (3 significant digits, unit 1 ns),
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

/**
 * What {@linkcode LatencyBuckets} folds into: an HDR histogram of
 * `newHistogram` (core/recorder.ts), or a Worker's {@linkcode LatencyCounts}.
 */
export interface LatencySink {
  /** Records one value, ns. */
  recordValue(value: number): void;
  /** Records `count` values of `value` ns. */
  recordValueWithCount(value: number, count: number): void;
}

/** log2 of half the sub-buckets of a 3-significant-digit HDR histogram (1024). */
const SUB_HALF_MAGNITUDE = 10;
const SUB_HALF = 1 << SUB_HALF_MAGNITUDE;
/** Values below this fit a 32-bit integer and are counted here. */
const LIMIT = 2 ** 32;
/** Buckets 0 … 21 cover 1 … 2^32 − 1: (21 + 1) × 1024 + 1024 counts. */
const LENGTH = (32 - SUB_HALF_MAGNITUDE + 1) * SUB_HALF;
/** The values `newHistogram` can hold lie below this (its top bucket ends at 2^42 − 1 ns). */
const HDR_LIMIT = 2 ** 42;

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
 * What a counter of {@linkcode LatencyBuckets} holds at most plus one: its
 * counts are 32-bit, half the cache lines a job's completions touch with
 * 64-bit ones (at 64 jobs on 2 cores each job's counters leave the caches
 * between its turns), and a counter about to wrap hands its count aside.
 */
const WRAP = 2 ** 32;

/** Zeroed counts arrays that discarded buckets gave back, for this thread's next ones. */
const spareCounts: Uint32Array[] = [];

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
  readonly #into: LatencySink;
  /**
   * Taken at the first value (92 KiB, a discarded one or new): a histogram an engine never
   * uses costs nothing.
   */
  #counts: Uint32Array | undefined;
  /** Counts handed aside by counters that reached `#wrapAt`, by index. */
  #wrapped: Map<number, number> | undefined;
  readonly #wrapAt: number;
  #n = 0;
  #min = LIMIT;
  #max = 0;
  /** Values of 2^32 ns or more since the last fold (rare: a request of over 4.3 s). */
  #over: number[] | undefined;

  /**
   * Buckets that fold into `into` (a histogram of `newHistogram`, or
   * {@linkcode LatencyCounts}). `wrapAt` (at most 2^32, the default) is
   * the count a counter hands aside at; smaller only to test that path.
   */
  constructor(into: LatencySink, wrapAt: number = WRAP) {
    this.#into = into;
    this.#wrapAt = Math.min(wrapAt, WRAP);
  }

  /** Counts one latency in whole ns (an integer ≥ 1). */
  record(ns: number): void {
    if (ns >= LIMIT) {
      (this.#over ??= []).push(ns);
      return;
    }
    const c = this.#counts ??= spareCounts.pop() ?? new Uint32Array(LENGTH);
    const i = indexOf(ns);
    const k = c[i]! + 1;
    if (k === this.#wrapAt) this.#wrap(i, k);
    else c[i] = k;
    this.#n++;
    if (ns < this.#min) this.#min = ns;
    if (ns > this.#max) this.#max = ns;
  }

  /** Moves counter `i`'s `count` aside and zeroes it (once every 2^32 values of one bucket). */
  #wrap(i: number, count: number): void {
    const w = this.#wrapped ??= new Map();
    w.set(i, (w.get(i) ?? 0) + count);
    this.#counts![i] = 0;
  }

  /**
   * Drops what was counted and gives the counts array to this thread's next
   * buckets: for buckets that are thrown away unread (a warm-up's). Its
   * memory is outside V8's heap and would wait for a garbage collection
   * that a job whose I/O allocates nothing may not make before its end.
   */
  discard(): void {
    // values of 2^32 ns or more go too, whether or not any other was counted
    if (this.#over !== undefined) this.#over.length = 0;
    const c = this.#counts;
    if (c === undefined) return;
    c.fill(0);
    spareCounts.push(c);
    this.#counts = undefined;
    this.#wrapped?.clear();
    this.#n = 0;
    this.#min = LIMIT;
    this.#max = 0;
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
    h.recordValue(this.#min);
    sink?.push(this.#min, 1);
    const both = this.#n > 1;
    if (both) {
      h.recordValue(this.#max);
      sink?.push(this.#max, 1);
    }
    const w = this.#wrapped;
    for (let i = lo; i <= hi; i++) {
      // less the minimum and the maximum, recorded above as themselves
      const n = c[i]! + (w?.get(i) ?? 0) - (i === lo ? 1 : 0) - (both && i === hi ? 1 : 0);
      if (n > 0) {
        // The minimum's bucket at the minimum: the same bucket, and the histogram's least value
        // stays the minimum (its lowest value may lie below it, as 4992 below 4993).
        const v = i === lo ? this.#min : valueOf(i);
        h.recordValueWithCount(v, n);
        sink?.push(v, n);
      }
    }
    c.fill(0, lo, hi + 1);
    w?.clear();
    this.#n = 0;
    this.#min = LIMIT;
    this.#max = 0;
  }
}

/**
 * One histogram's counts as a Worker sends them: the counts HDR's counts
 * array (of `newHistogram`) holds, sparse — only the indices counted, a few
 * hundred where a dense range could span 20,000 — and the values of 2^32 ns
 * or more as `value, count` pairs. Plain data: it crosses to the main thread
 * by structured clone, and `histogramOfCounts` (core/recorder.ts) makes the
 * HDR histogram of it there.
 */
export interface EncodedCounts {
  /** The indices in HDR's counts array that were counted, rising. */
  readonly index: Int32Array;
  /** Their counts. */
  readonly counts: Float64Array;
  /** Values of 2^32 ns or more, as `value, count` pairs. */
  readonly over: readonly number[];
}

/**
 * A histogram for a Worker: the counts array of `newHistogram`'s HDR
 * histogram, without the HDR library (a CommonJS package, for which every
 * isolate that loads it starts Deno's Node compatibility layer: about 45 ms
 * of CPU and 7 MiB per Worker). It counts what HDR would count, index for
 * index; the main thread makes the HDR histogram from {@linkcode encode}'s
 * counts, which reads, encodes and merges as one recorded directly.
 *
 * @example
 * ```ts
 * import { LatencyCounts } from "./latency_buckets.ts";
 * const c = new LatencyCounts();
 * c.recordValue(1500);
 * c.recordValueWithCount(5 * 2 ** 32, 2); // 21 s, kept aside as it is
 * const e = c.encode();
 * console.assert(c.totalCount === 3 && e.counts.length === 1 && e.over.length === 2);
 * ```
 */
export class LatencyCounts implements LatencySink {
  /** Allocated at the first value below 2^32 ns (184 KiB). */
  #counts: Float64Array | undefined;
  /** The lowest and highest index counted; lo > hi while none. */
  #lo = LENGTH;
  #hi = -1;
  /** Values of 2^32 ns or more, as `value, count` pairs. */
  readonly #over: number[] = [];
  #total = 0;

  /** How many values were recorded. */
  get totalCount(): number {
    return this.#total;
  }

  /** Records one latency in whole ns (an integer ≥ 0). */
  recordValue(value: number): void {
    this.recordValueWithCount(value, 1);
  }

  /** Records `count` latencies of `value` whole ns. */
  recordValueWithCount(value: number, count: number): void {
    this.#total += count;
    if (value >= LIMIT) {
      // as HDR's recordValue, which throws for a value its histogram cannot hold
      if (value >= HDR_LIMIT) throw new RangeError(`${value} ns is outside the histogram's range`);
      this.#over.push(value, count);
      return;
    }
    const i = indexOf(value);
    (this.#counts ??= new Float64Array(LENGTH))[i]! += count;
    if (i < this.#lo) this.#lo = i;
    if (i > this.#hi) this.#hi = i;
  }

  /** Adds what `other` recorded. */
  add(other: LatencyCounts): void {
    const c = other.#counts;
    if (c !== undefined) {
      const mine = this.#counts ??= new Float64Array(LENGTH);
      for (let i = other.#lo; i <= other.#hi; i++) mine[i]! += c[i]!;
      this.#lo = Math.min(this.#lo, other.#lo);
      this.#hi = Math.max(this.#hi, other.#hi);
    }
    for (const v of other.#over) this.#over.push(v);
    this.#total += other.#total;
  }

  /** The counts to send to the main thread: the indices counted, and their counts. */
  encode(): EncodedCounts {
    const c = this.#counts;
    let n = 0;
    for (let i = this.#lo; c !== undefined && i <= this.#hi; i++) if (c[i]! > 0) n++;
    const index = new Int32Array(n);
    const counts = new Float64Array(n);
    for (let i = this.#lo, k = 0; c !== undefined && i <= this.#hi; i++) {
      if (c[i]! > 0) {
        index[k] = i;
        counts[k++] = c[i]!;
      }
    }
    return { index, counts, over: [...this.#over] };
  }
}

/** The latency histograms of one direction in a Worker (see `LatencyHistograms`, core/recorder.ts). */
export interface LatencyCountsOfDirection {
  /** Total latency (fio's lat). */
  readonly lat: LatencyCounts;
  /** Completion latency (fio's clat). */
  readonly clat: LatencyCounts;
  /** Submission latency (fio's slat). */
  readonly slat: LatencyCounts;
  /** Time to first byte (S3 GETs). */
  readonly ttfb: LatencyCounts;
}

/** Empty counts for one direction. */
export function newLatencyCounts(): LatencyCountsOfDirection {
  return {
    lat: new LatencyCounts(),
    clat: new LatencyCounts(),
    slat: new LatencyCounts(),
    ttfb: new LatencyCounts(),
  };
}

/** One direction's counts, encoded for the Worker's result message. */
export interface EncodedDirection {
  readonly lat: EncodedCounts;
  readonly clat: EncodedCounts;
  readonly slat: EncodedCounts;
  readonly ttfb: EncodedCounts;
}

/**
 * Encodes every histogram of one direction.
 *
 * @example
 * ```ts
 * import { encodeDirection, newLatencyCounts } from "./latency_buckets.ts";
 * const d = newLatencyCounts();
 * d.lat.recordValue(2000);
 * console.assert(encodeDirection(d).lat.counts.length === 1);
 * ```
 */
export function encodeDirection(d: LatencyCountsOfDirection): EncodedDirection {
  return {
    lat: d.lat.encode(),
    clat: d.clat.encode(),
    slat: d.slat.encode(),
    ttfb: d.ttfb.encode(),
  };
}
