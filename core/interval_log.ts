/**
 * Latency per logging interval (as HdrHistogram's interval logs and fio's
 * `log_hist`): each job keeps, for every interval, the samples it recorded
 * in that interval alone, sparse — the HDR buckets its latency recorder
 * folded at the interval's boundary, as `value, count` pairs — and the runner
 * merges the jobs' samples interval by interval and reads p50, p99 and max
 * of each interval's histogram: percentiles of the merged counts, never
 * averaged. A job's cost per interval follows the buckets its samples
 * touched, not the histogram's size. The runner's side is
 * core/interval_latency.ts (this module loads no HDR library: it runs in
 * every job Worker).
 *
 * @module
 */

/** One interval's samples of one direction: `value, count` pairs; empty when none completed. */
export type IntervalCounts = readonly number[];

/** One job's samples per logging interval, per direction. */
export interface IntervalSnapshots {
  readonly read: IntervalCounts[];
  readonly write: IntervalCounts[];
}

/**
 * The worker's side: the samples of each interval. The job's latency
 * recorder appends what it folds to {@linkcode IntervalLog.read} or
 * {@linkcode IntervalLog.write} (see `LatencyBuckets.foldInto`), and
 * {@linkcode IntervalLog.close} files them under the interval that ended.
 *
 * @example
 * ```ts
 * import { IntervalLog } from "./interval_log.ts";
 * const log = new IntervalLog(1000, 0);
 * log.read.push(5_000, 1); // one read of 5 µs
 * log.close(2500); // the intervals ending at 1000 and 2000 ms
 * console.assert(log.snapshots().read.length === 2);
 * console.assert(log.snapshots().read[1]!.length === 0);
 * ```
 */
export class IntervalLog {
  readonly #ms: number;
  #end: number;
  readonly #read: IntervalCounts[] = [];
  readonly #write: IntervalCounts[] = [];
  #pendingRead: number[] = [];
  #pendingWrite: number[] = [];

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

  /** The open interval's read samples so far, as `value, count` pairs: append to it. */
  get read(): number[] {
    return this.#pendingRead;
  }

  /** The open interval's write samples so far, as `value, count` pairs: append to it. */
  get write(): number[] {
    return this.#pendingWrite;
  }

  /** Files every interval that ended at or before `now`; the samples so far go to the first. */
  close(now: number): void {
    while (now >= this.#end) {
      this.#snapshot();
      this.#end += this.#ms;
    }
  }

  /**
   * Files the open interval when samples came since the last one (a job
   * that ends inside an interval), and logs nothing more.
   */
  finish(): void {
    if (this.#end === Infinity) return;
    if (this.#pendingRead.length > 0 || this.#pendingWrite.length > 0) this.#snapshot();
    this.#end = Infinity;
  }

  #snapshot(): void {
    this.#read.push(this.#pendingRead);
    this.#write.push(this.#pendingWrite);
    this.#pendingRead = [];
    this.#pendingWrite = [];
  }

  /** The intervals filed so far. */
  snapshots(): IntervalSnapshots {
    return { read: this.#read, write: this.#write };
  }
}
