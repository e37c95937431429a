/**
 * Latency per logging interval, from HDR histograms (as HdrHistogram's
 * interval logs and fio's `log_hist`): each job snapshots its cumulative
 * total-latency histograms at every interval boundary (never per I/O), and
 * the runner merges the jobs' snapshots interval by interval and reads
 * p50, p99 and max of each interval's histogram — percentiles of the merged
 * counts, never averaged.
 *
 * @module
 */

import { decodeHistogram, encodeHistogram, type Histogram, newHistogram } from "./recorder.ts";

/** One job's snapshots: the encoded cumulative histogram at each interval's end, per direction. */
export interface IntervalSnapshots {
  /** `""` where the direction had no sample yet. */
  readonly read: string[];
  readonly write: string[];
}

/**
 * The worker's side: cumulative snapshots at interval boundaries.
 *
 * @example
 * ```ts
 * import { IntervalLog } from "./interval_log.ts";
 * import { newHistogram } from "./recorder.ts";
 * const [read, write] = [newHistogram(), newHistogram()];
 * const log = new IntervalLog(1000, 0);
 * read.recordValue(5_000);
 * log.close(2500, read, write); // the intervals ending at 1000 and 2000 ms
 * console.assert(log.snapshots().read.length === 2);
 * ```
 */
export class IntervalLog {
  readonly #ms: number;
  #end: number;
  readonly #read: string[] = [];
  readonly #write: string[] = [];
  #last = { read: 0, write: 0 };

  /** Intervals of `intervalMs` from `start` (monoNow ms). */
  constructor(intervalMs: number, start: number) {
    if (!(intervalMs > 0)) throw new RangeError(`interval must be > 0 ms, got ${intervalMs}`);
    this.#ms = intervalMs;
    this.#end = start + intervalMs;
  }

  /** The end of the open interval: {@linkcode close} has nothing to do before it. */
  get end(): number {
    return this.#end;
  }

  /** Snapshots every interval that ended at or before `now`. */
  close(now: number, read: Histogram, write: Histogram): void {
    while (now >= this.#end) {
      this.#snapshot(read, write);
      this.#end += this.#ms;
    }
  }

  /**
   * Snapshots the open interval when samples came since the last snapshot
   * (a job that ends inside an interval), and logs nothing more.
   */
  finish(read: Histogram, write: Histogram): void {
    if (this.#end === Infinity) return;
    if (read.totalCount !== this.#last.read || write.totalCount !== this.#last.write) {
      this.#snapshot(read, write);
    }
    this.#end = Infinity;
  }

  #snapshot(read: Histogram, write: Histogram): void {
    this.#read.push(this.#encode(read, this.#read, this.#last.read));
    this.#write.push(this.#encode(write, this.#write, this.#last.write));
    this.#last = { read: read.totalCount, write: write.totalCount };
  }

  /** Unchanged since the last snapshot: the same string, not encoded again. */
  #encode(h: Histogram, done: readonly string[], lastCount: number): string {
    if (h.totalCount === 0) return "";
    if (h.totalCount === lastCount && done.length > 0) return done[done.length - 1]!;
    return encodeHistogram(h);
  }

  /** The snapshots so far. */
  snapshots(): IntervalSnapshots {
    return { read: this.#read, write: this.#write };
  }
}

/** p50, p99 and max of total latency per interval, ns; null where no request completed. */
export interface IntervalLatency {
  p50_ns: (number | null)[];
  p99_ns: (number | null)[];
  max_ns: (number | null)[];
}

/**
 * The runner's side: merges the jobs' snapshots of one direction and reads
 * each of the first `n` intervals. A job with fewer snapshots (it ended
 * earlier) adds nothing to the intervals after its last.
 *
 * @example
 * ```ts
 * import { intervalLatency, IntervalLog } from "./interval_log.ts";
 * import { newHistogram } from "./recorder.ts";
 * const [read, write] = [newHistogram(), newHistogram()];
 * const log = new IntervalLog(1000, 0);
 * read.recordValue(5_000);
 * log.close(1000, read, write);
 * read.recordValue(9_000);
 * log.close(2000, read, write);
 * const lat = intervalLatency([log.snapshots().read], 3);
 * console.assert(lat.max_ns[1]! >= 8_990 && lat.p50_ns[2] === null);
 * ```
 */
export function intervalLatency(jobs: readonly (readonly string[])[], n: number): IntervalLatency {
  const out: IntervalLatency = { p50_ns: [], p99_ns: [], max_ns: [] };
  const decoded = jobs.map(() => ({ text: "", h: undefined as Histogram | undefined }));
  let prev = newHistogram();
  for (let i = 0; i < n; i++) {
    const cur = newHistogram();
    jobs.forEach((snaps, j) => {
      const text = snaps[Math.min(i, snaps.length - 1)] ?? "";
      if (text === "") return;
      const d = decoded[j]!;
      if (d.text !== text) {
        d.text = text;
        d.h = decodeHistogram(text);
      }
      cur.add(d.h!);
    });
    const delta = newHistogram();
    delta.add(cur);
    delta.subtract(prev);
    const none = delta.totalCount === 0;
    out.p50_ns.push(none ? null : delta.getValueAtPercentile(50));
    out.p99_ns.push(none ? null : delta.getValueAtPercentile(99));
    out.max_ns.push(none ? null : delta.maxValue);
    prev = cur;
  }
  return out;
}
