/**
 * The runner's side of the latency per logging interval: merges the jobs'
 * samples (core/interval_log.ts) interval by interval into HDR histograms
 * and reads p50, p99 and max of each.
 *
 * @module
 */

import { type Histogram, newHistogram } from "./recorder.ts";
import type { IntervalCounts } from "./interval_log.ts";

/** p50, p99 and max of total latency per interval, ns; null where no request completed. */
export interface IntervalLatency {
  p50_ns: (number | null)[];
  p99_ns: (number | null)[];
  max_ns: (number | null)[];
}

/**
 * The runner's side: merges the jobs' samples of one direction and reads
 * each of the first `n` intervals. A job with fewer intervals (it ended
 * earlier) adds nothing to the intervals after its last. The max is the
 * highest value of the top bucket, as HDR reads every percentile.
 *
 * @example
 * ```ts
 * import { intervalLatency } from "./interval_latency.ts";
 * import { IntervalLog } from "./interval_log.ts";
 * const log = new IntervalLog(1000, 0);
 * log.read.push(5_000, 1);
 * log.close(1000);
 * log.read.push(9_000, 1);
 * log.close(2000);
 * const lat = intervalLatency([log.snapshots().read], 3);
 * console.assert(lat.max_ns[1]! >= 8_990 && lat.p50_ns[2] === null);
 * ```
 */
export function intervalLatency(
  jobs: readonly (readonly IntervalCounts[])[],
  n: number,
): IntervalLatency {
  const out: IntervalLatency = { p50_ns: [], p99_ns: [], max_ns: [] };
  let h: Histogram | undefined;
  for (let i = 0; i < n; i++) {
    if (h === undefined || h.totalCount > 0) h = newHistogram();
    for (const job of jobs) {
      const pairs = job[i];
      if (pairs === undefined) continue;
      for (let k = 0; k < pairs.length; k += 2) h.recordValueWithCount(pairs[k]!, pairs[k + 1]!);
    }
    const none = h.totalCount === 0;
    out.p50_ns.push(none ? null : h.getValueAtPercentile(50));
    out.p99_ns.push(none ? null : h.getValueAtPercentile(99));
    out.max_ns.push(none ? null : h.getValueAtPercentile(100));
  }
  return out;
}
