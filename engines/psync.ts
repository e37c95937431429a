/**
 * `psync`: synchronous pread(2)/pwrite(2), one I/O in flight per job, as
 * fio's psync engine. Parallelism comes from running jobs on several Workers.
 *
 * @module
 */

import type { JobPlan } from "../bench/_protocol.ts";
import { type AlignedBuffer, allocAligned, freeAligned, lastErrno, libc } from "../tiers/_libc.ts";
import { fillRandom, layOut, openJobFile } from "./_file.ts";
import { type JobEngine, type JobRuntime, SyscallFailure } from "./_job.ts";

/**
 * The psync engine of one job.
 *
 * @example
 * ```ts ignore
 * const engine = PsyncEngine.open(plan); // opens and lays out the file
 * try { engine.run(runtime); } finally { engine.close(); }
 * ```
 */
export class PsyncEngine implements JobEngine {
  readonly #plan: JobPlan;
  readonly #fd: number;
  readonly #buf: AlignedBuffer;

  private constructor(plan: JobPlan, fd: number, buf: AlignedBuffer) {
    this.#plan = plan;
    this.#fd = fd;
    this.#buf = buf;
  }

  /** Opens the job's file, lays it out and allocates the aligned buffer. */
  static open(plan: JobPlan): PsyncEngine {
    const fd = openJobFile(plan);
    try {
      layOut(fd, plan);
      const buf = allocAligned(plan.bs, plan.alignment);
      fillRandom(buf.bytes, plan.seed ^ 0xa5a5 ^ plan.job);
      return new PsyncEngine(plan, fd, buf);
    } catch (e) {
      libc().close(fd);
      throw e;
    }
  }

  run(rt: JobRuntime): void {
    const { pread, pwrite } = libc();
    const fd = this.#fd;
    const ptr = this.#buf.pointer;
    const bs = this.#plan.bs;
    for (;;) {
      const t0 = performance.now();
      if (!rt.mayIssue(t0)) break;
      const isRead = rt.nextIsRead();
      const offset = rt.nextOffset();
      const n = isRead ? pread(fd, ptr, bs, offset) : pwrite(fd, ptr, bs, offset);
      const t1 = performance.now();
      if (n !== bs) {
        const errno = n < 0 ? lastErrno() : 0;
        const detail = n < 0 ? undefined : `(short ${isRead ? "read" : "write"}: ${n} of ${bs})`;
        throw new SyscallFailure(
          isRead ? "pread" : "pwrite",
          errno,
          this.#plan.path,
          offset,
          detail,
        );
      }
      rt.complete(isRead, t1, (t1 - t0) * 1e6, -1);
    }
  }

  close(): void {
    libc().close(this.#fd);
    freeAligned(this.#buf);
  }
}
