/**
 * `noop`: the null tier's engine. Issues nothing and completes at once, so
 * its IOPS are the ceiling of the harness itself (the clock, the counters and
 * the histograms), like fio's null ioengine.
 *
 * @module
 */

import { monoNow } from "../core/libc.ts";
import { type JobEngine, type JobRuntime, TIMES } from "./types.ts";
import { OP } from "../core/io_pattern.ts";

/**
 * The engine that does no I/O.
 *
 * @example
 * ```ts
 * import { NoopEngine } from "./noop.ts";
 * new NoopEngine().close();
 * ```
 */
export class NoopEngine implements JobEngine {
  run(rt: JobRuntime): void {
    // Each I/O's issue is the last one's completion, as one clock read.
    const times = rt.times;
    times[TIMES.ISSUE] = monoNow();
    while (rt.mayIssue()) {
      rt.next();
      const t = monoNow();
      if (rt.op >= OP.FSYNC) rt.completeSync(t);
      else {
        times[TIMES.DONE] = t;
        times[TIMES.LAT] = (t - times[TIMES.ISSUE]!) * 1e6;
        rt.complete(rt.isRead, rt.length, rt.offset);
      }
      times[TIMES.ISSUE] = t;
    }
  }

  /** The loop itself: it does no I/O. */
  warm(rt: JobRuntime): void {
    this.run(rt);
  }

  close(): void {}
}
