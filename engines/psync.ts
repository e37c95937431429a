/**
 * `psync`: synchronous pread(2)/pwrite(2), one I/O in flight per job, as
 * fio's psync engine. Parallelism comes from running jobs on several Workers.
 *
 * @module
 */

import type { JobPlan } from "../core/job_protocol.ts";
import {
  type AlignedBuffer,
  allocAligned,
  freeAligned,
  lastErrno,
  libc,
  monoNow,
} from "../core/libc.ts";
import { endJob, fillBlocks, JobFiles } from "./_file.ts";
import { type BlockVerifier, verifierOf } from "../core/verify.ts";
import { type JobEngine, type JobRuntime, SyscallFailure } from "./types.ts";

/**
 * The psync engine of one job.
 *
 * @example
 * ```ts ignore
 * const engine = PsyncEngine.open(plan); // opens and lays out the files
 * try { engine.run(runtime); } finally { engine.close(); }
 * ```
 */
export class PsyncEngine implements JobEngine {
  readonly #plan: JobPlan;
  readonly #files: JobFiles;
  readonly #buf: AlignedBuffer;
  readonly #verifier: BlockVerifier | undefined;

  private constructor(
    plan: JobPlan,
    files: JobFiles,
    buf: AlignedBuffer,
    verifier: BlockVerifier | undefined,
  ) {
    this.#plan = plan;
    this.#files = files;
    this.#buf = buf;
    this.#verifier = verifier;
  }

  /** Opens the job's files, lays them out and allocates the aligned buffer. */
  static open(plan: JobPlan): PsyncEngine {
    const files = JobFiles.open(plan);
    try {
      files.layOut();
      const buf = allocAligned(plan.bs, plan.alignment);
      fillBlocks(plan, buf.bytes);
      return new PsyncEngine(plan, files, buf, verifierOf(plan));
    } catch (e) {
      files.close();
      throw e;
    }
  }

  run(rt: JobRuntime): void {
    const { pread, pwrite } = libc();
    const files = this.#files;
    const single = files.fds.length === 1;
    const fd0 = files.fds[0]!;
    const region = this.#plan.target.regionOffset;
    const ptr = this.#buf.pointer;
    const bs = this.#plan.bs;
    // 64-bit FFI arguments go as BigInt, or V8 leaves its fast call path (see core/libc.ts).
    const count = BigInt(bs);
    const v = this.#verifier;
    const block = this.#buf.bytes;
    for (;;) {
      const t0 = monoNow();
      if (!rt.mayIssue(t0)) break;
      const isRead = rt.nextIsRead();
      const offset = rt.nextOffset();
      const fd = single ? fd0 : files.fds[files.fileOf(offset)]!;
      const at = single ? offset + region : files.offsetIn(offset);
      const pos = BigInt(at);
      if (v !== undefined && !isRead) v.prepareWrite(block, at, offset);
      rt.busy(t0, isRead, single ? 0 : files.fileOf(offset), at);
      const n = isRead ? pread(fd, ptr, count, pos) : pwrite(fd, ptr, count, pos);
      rt.idle();
      const t1 = monoNow();
      if (n !== bs) {
        const errno = n < 0 ? lastErrno() : 0;
        const detail = n < 0 ? undefined : `(short ${isRead ? "read" : "write"}: ${n} of ${bs})`;
        const path = files.paths[files.fileOf(offset)]!;
        throw new SyscallFailure(isRead ? "pread" : "pwrite", errno, path, at, detail);
      }
      if (v !== undefined && isRead) {
        v.checkRead(block, files.paths[files.fileOf(offset)]!, at, offset);
      }
      rt.complete(isRead, t1, (t1 - t0) * 1e6, -1);
    }
    endJob(rt, this.#plan, files);
  }

  close(): void {
    this.#files.close();
    freeAligned(this.#buf);
  }
}
