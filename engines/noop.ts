/**
 * `noop`: the null tier's engine. Issues nothing and completes at once, so
 * its IOPS are the ceiling of the harness itself (the clock, the counters and
 * the histograms), like fio's null ioengine.
 *
 * @module
 */

import { monoNow } from "../core/libc.ts";
import type { JobEngine, JobRuntime } from "./types.ts";
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
    let t0 = monoNow();
    for (;;) {
      if (!rt.mayIssue(t0)) break;
      rt.next();
      const t1 = monoNow();
      if (rt.op >= OP.FSYNC) rt.completeSync(t1);
      else rt.complete(rt.isRead, t1, (t1 - t0) * 1e6, -1, -1, rt.length, rt.offset);
      t0 = t1;
    }
  }

  /** The loop itself: it does no I/O. */
  warm(rt: JobRuntime): void {
    this.run(rt);
  }

  close(): void {}
}
