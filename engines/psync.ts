/**
 * `psync`: synchronous pread(2)/pwrite(2), one I/O in flight per job, as
 * fio's psync engine. Parallelism comes from running jobs on several Workers.
 *
 * @module
 */

import type { JobPlan } from "../core/job_protocol.ts";
import {
  type AlignedBuffer,
  allocIoBuffer,
  freeAligned,
  lastErrno,
  libc,
  monoNow,
} from "../core/libc.ts";
import { endJob, fillBlocks, JobFiles } from "./_file.ts";
import { writeFiller } from "./_data_fill.ts";
import { OP } from "../core/io_pattern.ts";
import { type BlockVerifier, verifierOf } from "../core/verify.ts";
import { type JobEngine, type JobRuntime, SyscallFailure, TIMES } from "./types.ts";

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
      const buf = allocIoBuffer(plan.bs, plan.alignment);
      fillBlocks(plan, buf.bytes);
      return new PsyncEngine(plan, files, buf, verifierOf(plan));
    } catch (e) {
      files.close();
      throw e;
    }
  }

  run(rt: JobRuntime): void {
    const step = this.#stepper(rt, false);
    while (step()) {
      // one I/O a call: see #stepper
    }
    endJob(rt, this.#plan, this.#files);
  }

  /**
   * The loop on a throwaway runtime before the start barrier (see warmUp in
   * types.ts), every request zero bytes long: the same pread(2) and pwrite(2)
   * from the same code, so that V8 compiles the loop's body and its FFI calls
   * optimised before the measured run (the body is a closure of one site,
   * whose compiled code the real run's closure shares), and no byte is read
   * or written, no sync run. A job that verifies is not warmed (its checks
   * would find nothing read).
   */
  warm(rt: JobRuntime): void {
    if (this.#verifier !== undefined) return;
    const step = this.#stepper(rt, true);
    while (step()) {
      // one I/O a call, as in run
    }
  }

  /**
   * The loop's body: a function that makes one I/O of `rt` a call, false
   * once the runtime says stop. One call an I/O, not one long loop, so that
   * V8 optimises it by its calls: a loop entered once is optimised only by
   * on-stack replacement, which counts bytecodes run, not iterations; at a
   * few thousand 1 MiB direct reads a second that came some 10 s in, after
   * the measured window, which then ran pread through Deno's slow FFI path
   * from the interpreter (twice fio's user time per I/O). With `zero` (the
   * warm-up) each request is zero bytes long and no sync is run.
   */
  #stepper(rt: JobRuntime, zero: boolean): () => boolean {
    const { pread, pwrite } = libc();
    const files = this.#files;
    const ptr = this.#buf.pointer;
    const bs = this.#plan.bs;
    // 64-bit FFI arguments go as BigInt, or V8 leaves its fast call path (see core/libc.ts).
    let len = bs;
    let count = BigInt(bs);
    const v = this.#verifier;
    const block = this.#buf.bytes;
    const filler = writeFiller(this.#plan);
    const fill = filler?.perWrite ? filler : undefined;
    const pattern = this.#plan.pattern;
    return () => {
      const t0 = monoNow();
      rt.times[TIMES.ISSUE] = t0;
      if (!rt.mayIssue()) return false;
      rt.next();
      const f = rt.file;
      const fd = files.fds[f]!;
      if (rt.op >= OP.FSYNC) {
        rt.busy(t0, false, f, -1);
        if (!zero) files.sync(f, rt.op === OP.FDATASYNC);
        rt.idle();
        rt.completeSync(monoNow());
        return true;
      }
      const isRead = rt.isRead;
      const at = rt.offset;
      if (rt.length !== len) {
        len = rt.length;
        count = BigInt(len);
      }
      if (v !== undefined && !isRead) v.prepareWrite(block, at, rt.jobOffset);
      else if (fill !== undefined && !isRead) fill.fill(block, len, at);
      rt.busy(t0, isRead, f, at);
      const c = zero ? 0n : count;
      let n = isRead ? pread(fd, ptr, c, BigInt(at)) : pwrite(fd, ptr, c, BigInt(at));
      // a job file's short transfer: the rest is issued again, as fio requeues it (n < len
      // first: warming's zero-byte requests then run that compare too, or V8 would throw the
      // warmed code away at the first real I/O for want of feedback there)
      if (n < len && n > 0 && pattern) n = this.#rest(isRead, fd, n, len, at);
      rt.idle();
      const t1 = monoNow();
      if (n !== (zero ? 0 : len)) {
        const errno = n < 0 ? lastErrno() : 0;
        const path = files.paths[f]!;
        if (n < 0 && rt.tolerates(isRead, errno, `${isRead ? "pread" : "pwrite"} ${path}`)) {
          return true;
        }
        const detail = n < 0 ? undefined : `(short ${isRead ? "read" : "write"}: ${n} of ${len})`;
        throw new SyscallFailure(isRead ? "pread" : "pwrite", errno, path, at, detail);
      }
      if (v !== undefined && isRead) v.checkRead(block, files.paths[f]!, at, rt.jobOffset);
      const times = rt.times;
      times[TIMES.DONE] = t1;
      times[TIMES.LAT] = (t1 - t0) * 1e6;
      rt.complete(isRead, len, at);
      return true;
    };
  }

  /** Issues the rest of a short transfer until done: the total, short, or -1 (errno set). */
  #rest(isRead: boolean, fd: number, done: number, len: number, at: number): number {
    const { pread, pwrite } = libc();
    while (done < len) {
      const p = Deno.UnsafePointer.offset(this.#buf.pointer, done)!;
      const rest = BigInt(len - done), pos = BigInt(at + done);
      const n = isRead ? pread(fd, p, rest, pos) : pwrite(fd, p, rest, pos);
      if (n <= 0) return n < 0 ? -1 : done;
      done += n;
    }
    return done;
  }

  close(): void {
    this.#files.close();
    freeAligned(this.#buf);
  }
}
