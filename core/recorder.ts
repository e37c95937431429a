/**
 * Latency histograms (HDR, hdr-histogram-js) and fio's statistics fields.
 *
 * Every job records into its own histograms; the runner merges them by adding
 * counts, then reads percentiles from the merged histogram. Percentiles are
 * never averaged. Values are nanoseconds, kept to 3 significant digits
 * (relative error ≤ 0.1 %, finer than fio's ~0.8 % bins) from 1 ns to one hour.
 *
 * @module
 */

import * as hdr from "hdr-histogram-js";
import type { EncodedCounts, EncodedDirection } from "./latency_buckets.ts";

/** A latency histogram in nanoseconds. */
export type Histogram = hdr.Histogram;

const HIGHEST_NS = 3_600_000_000_000;

/**
 * A new, empty latency histogram.
 *
 * @example
 * ```ts
 * import { newHistogram } from "./recorder.ts";
 * const h = newHistogram();
 * h.recordValue(1500);
 * console.assert(h.totalCount === 1);
 * ```
 */
export function newHistogram(): Histogram {
  return hdr.build({
    bitBucketSize: 64,
    lowestDiscernibleValue: 1,
    highestTrackableValue: HIGHEST_NS,
    numberOfSignificantValueDigits: 3,
    useWebAssembly: false,
  });
}

/** The histogram as compressed base64 (HdrHistogram's standard encoding). */
export function encodeHistogram(h: Histogram): string {
  return hdr.encodeIntoCompressedBase64(h);
}

/**
 * Reads back a histogram from {@linkcode encodeHistogram}, e.g. from a result
 * file, so any percentile can be recomputed later.
 *
 * @example
 * ```ts
 * import { decodeHistogram, encodeHistogram, newHistogram } from "./recorder.ts";
 * const h = newHistogram();
 * h.recordValue(42_000);
 * console.assert(decodeHistogram(encodeHistogram(h)).totalCount === 1);
 * ```
 */
export function decodeHistogram(encoded: string): Histogram {
  const decoded = hdr.decodeFromCompressedBase64(encoded, 64, false);
  const h = newHistogram();
  h.add(decoded);
  return h;
}

/** The percentiles fio reports by default. */
export const PERCENTILES = [
  1,
  5,
  10,
  20,
  30,
  40,
  50,
  60,
  70,
  80,
  90,
  95,
  99,
  99.5,
  99.9,
  99.95,
  99.99,
] as const;

/** fio's latency block: `lat_ns`, `clat_ns` and `slat_ns` share this shape. */
export interface LatencyStats {
  min: number;
  max: number;
  mean: number;
  stddev: number;
  /** Number of samples (fio's `N`). */
  N: number;
  /** Keys as fio prints them: `"50.000000"`, `"99.990000"`. */
  percentile: Record<string, number>;
}

/**
 * fio-style statistics of a histogram. An empty histogram gives zeros, as
 * fio prints for a latency an engine does not measure.
 *
 * @example
 * ```ts
 * import { latencyStats, newHistogram } from "./recorder.ts";
 * const h = newHistogram();
 * for (let i = 1; i <= 100; i++) h.recordValue(i * 1000);
 * const s = latencyStats(h);
 * console.assert(s.N === 100 && Math.abs(s.percentile["50.000000"]! - 50_000) < 100);
 * ```
 */
export function latencyStats(h: Histogram): LatencyStats {
  const percentile: Record<string, number> = {};
  if (h.totalCount === 0) {
    for (const p of PERCENTILES) percentile[p.toFixed(6)] = 0;
    return { min: 0, max: 0, mean: 0, stddev: 0, N: 0, percentile };
  }
  for (const p of PERCENTILES) percentile[p.toFixed(6)] = h.getValueAtPercentile(p);
  return {
    min: h.minNonZeroValue,
    max: h.maxValue,
    mean: h.mean,
    stddev: h.stdDeviation,
    N: h.totalCount,
    percentile,
  };
}

/** The latencies of one direction: total, completion, submission, first byte. */
export interface LatencyHistograms {
  /** Total: from the moment an I/O is prepared to its completion (fio's lat). */
  lat: Histogram;
  /** Completion: from submission to completion (fio's clat). */
  clat: Histogram;
  /** Submission: the time spent handing the I/O to the kernel (fio's slat). */
  slat: Histogram;
  /** Time to first byte of a response (S3 GETs); empty elsewhere. */
  ttfb: Histogram;
}

/** The names of the histograms of one direction. */
export const LATENCY_KINDS = ["lat", "clat", "slat", "ttfb"] as const;

/** Empty histograms for one direction. */
export function newLatencyHistograms(): LatencyHistograms {
  return { lat: newHistogram(), clat: newHistogram(), slat: newHistogram(), ttfb: newHistogram() };
}

/** The histograms of one direction, encoded (for Worker messages and results). */
export type EncodedLatency = Record<typeof LATENCY_KINDS[number], string>;

/** Encodes every histogram of one direction. */
export function encodeLatency(h: LatencyHistograms): EncodedLatency {
  return {
    lat: encodeHistogram(h.lat),
    clat: encodeHistogram(h.clat),
    slat: encodeHistogram(h.slat),
    ttfb: encodeHistogram(h.ttfb),
  };
}

/** Decodes what {@linkcode encodeLatency} wrote. */
export function decodeLatency(e: EncodedLatency): LatencyHistograms {
  return {
    lat: decodeHistogram(e.lat),
    clat: decodeHistogram(e.clat),
    slat: decodeHistogram(e.slat),
    ttfb: decodeHistogram(e.ttfb),
  };
}

/**
 * The HDR histogram of a Worker's counts (`LatencyCounts.encode`,
 * core/latency_buckets.ts): the very histogram {@linkcode decodeHistogram}
 * gives of {@linkcode encodeHistogram} of one that recorded the same values
 * (same counts, same encoding, same minimum and maximum — those of their
 * buckets, as a decoded histogram knows them).
 *
 * @example
 * ```ts
 * import { LatencyCounts } from "./latency_buckets.ts";
 * import { encodeHistogram, histogramOfCounts, newHistogram } from "./recorder.ts";
 * const c = new LatencyCounts();
 * const h = newHistogram();
 * for (const v of [1, 1500, 123_456, 2 ** 33]) {
 *   c.recordValue(v);
 *   h.recordValue(v);
 * }
 * console.assert(encodeHistogram(histogramOfCounts(c.encode())) === encodeHistogram(h));
 * ```
 */
export function histogramOfCounts(e: EncodedCounts): Histogram {
  const counted = newHistogram();
  if (!(counted instanceof hdr.JsHistogram)) throw new TypeError("a JavaScript HDR histogram");
  for (let k = 0; k < e.index.length; k++) {
    counted.recordValueWithCount(counted.valueFromIndex(e.index[k]!), e.counts[k]!);
  }
  for (let k = 0; k < e.over.length; k += 2) {
    counted.recordValueWithCount(e.over[k]!, e.over[k + 1]!);
  }
  // as decodeHistogram: the tracked minimum and maximum from the counts, then added to a new one
  counted.establishInternalTackingValues();
  const h = newHistogram();
  h.add(counted);
  return h;
}

/** {@linkcode histogramOfCounts} of every histogram of one direction. */
export function histogramsOfCounts(e: EncodedDirection): LatencyHistograms {
  return {
    lat: histogramOfCounts(e.lat),
    clat: histogramOfCounts(e.clat),
    slat: histogramOfCounts(e.slat),
    ttfb: histogramOfCounts(e.ttfb),
  };
}

/** Adds `from` into `into`, histogram by histogram. */
export function mergeLatency(into: LatencyHistograms, from: LatencyHistograms): void {
  into.lat.add(from.lat);
  into.clat.add(from.clat);
  into.slat.add(from.slat);
  into.ttfb.add(from.ttfb);
}

/**
 * Every value the histogram recorded, as `[value, count]` pairs in rising
 * order, one pair per HDR bucket: `value` is the highest value the bucket
 * holds (within 0.1 % of every value recorded into it).
 *
 * @example
 * ```ts
 * import { newHistogram, recordedValues } from "./recorder.ts";
 * const h = newHistogram();
 * h.recordValue(1500);
 * h.recordValue(1500);
 * h.recordValue(90_000);
 * const pairs = recordedValues(h);
 * console.assert(pairs.length === 2 && pairs[0]![1] === 2);
 * ```
 */
export function recordedValues(h: Histogram): [value: number, count: number][] {
  if (!(h instanceof hdr.JsHistogram)) {
    throw new TypeError("recordedValues: a JavaScript HDR histogram (newHistogram) is required");
  }
  const it = h.recordedValuesIterator;
  it.reset();
  const pairs: [number, number][] = [];
  while (it.hasNext()) {
    const v = it.next();
    pairs.push([v.valueIteratedTo, v.countAtValueIteratedTo]);
  }
  return pairs;
}
