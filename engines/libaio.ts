/**
 * `libaio`: Linux native asynchronous I/O through libaio.so.1 (io_setup,
 * io_submit, io_getevents), keeping `iodepth` I/Os in flight per job, as
 * fio's libaio engine.
 *
 * Timing follows fio: slat is from preparing an I/O to io_submit returning,
 * clat from then to the moment its completion is reaped, lat the sum. Each
 * I/O is submitted on its own as a slot frees, as fio does by default. Without
 * O_DIRECT the kernel completes buffered I/O inside io_submit, as it does for
 * fio.
 *
 * Under a rate (--rate, --rate-iops) at any depth, as fio: each request goes
 * at its intended start while up to `iodepth` are in flight; between starts
 * the job reaps completions, io_getevents timing out at the next start
 * instead of a blind sleep, so a completion is timed when it happens. When
 * every slot is busy at an intended start, the request waits for a slot, and
 * the wait counts in its latency (from the intended start) and the job's lag.
 *
 * @module
 */

import type { JobPlan } from "../core/job_protocol.ts";
import { monoNow } from "../core/libc.ts";
import { AioRing, libaio, setTimespec, timespec } from "./_aio_ring.ts";
/** The names libaio is loaded by, newest Debian first (libaio.so.1t64, then libaio.so.1). */
export { LIBAIO_NAMES } from "./_aio_ring.ts";
import { fillRandom, JobFiles } from "./_file.ts";
import { verifierOf } from "../core/verify.ts";
import { type JobEngine, type JobRuntime, SyscallFailure } from "./types.ts";

/** How long io_getevents waits before looking at the stop flag again. */
const REAP_TIMEOUT_NS = 100_000_000;
/**
 * Under a rate, with requests in flight, the job reaps completions until this
 * long before the next intended start, then lets the runtime's wait take the
 * rest (it spins the last stretch).
 */
const PACE_EARLY_MS = 0.1;
const EAGAIN = 11;
const EINTR = 4;

/**
 * Where the libaio engine's calls come from, for the results: the name of
 * libaio.so.1 as it was loaded, or raw system calls through libc when it is
 * not installed.
 *
 * @example
 * ```ts
 * import { libaioSource } from "./libaio.ts";
 * console.log(libaioSource()); // "libaio.so.1t64", or "syscall (libaio.so.1 not installed)"
 * ```
 */
export function libaioSource(): string {
  return libaio().source;
}

/**
 * The libaio engine of one job.
 *
 * @example
 * ```ts ignore
 * const engine = LibaioEngine.open(plan);
 * try { engine.run(runtime); } finally { engine.close(); }
 * ```
 */
export class LibaioEngine implements JobEngine {
  readonly #plan: JobPlan;
  readonly #files: JobFiles;
  /** `iodepth` slots of `bs` bytes, aligned to the plan's alignment. */
  readonly #ring: AioRing;
  readonly #timeout = timespec(REAP_TIMEOUT_NS);
  /** Under a rate: the reap's timeout up to the next intended start. */
  readonly #untilDue = timespec(0);

  private constructor(plan: JobPlan, files: JobFiles, ring: AioRing) {
    this.#plan = plan;
    this.#files = files;
    this.#ring = ring;
  }

  /** Opens the job's file, lays it out, and sets up the kernel AIO context. */
  static open(plan: JobPlan): LibaioEngine {
    const files = JobFiles.open(plan);
    try {
      files.layOut();
      const ring = AioRing.open(plan.iodepth, plan.bs, plan.alignment, (syscall, errno) => {
        throw new SyscallFailure(
          syscall,
          errno,
          files.paths[0]!,
          undefined,
          `(depth ${plan.iodepth})`,
        );
      });
      if (plan.verify) verifierOf(plan)!.fillPattern(ring.buffers.bytes);
      else fillRandom(ring.buffers.bytes, plan.seed ^ 0xa5a5 ^ plan.job);
      return new LibaioEngine(plan, files, ring);
    } catch (e) {
      files.close();
      throw e;
    }
  }

  run(rt: JobRuntime): void {
    const plan = this.#plan;
    const depth = plan.iodepth;
    const bs = plan.bs;
    const ring = this.#ring;
    const files = this.#files;
    const prepAt = new Float64Array(depth);
    const submitAt = new Float64Array(depth);
    const isRead = new Uint8Array(depth);
    const offsets = new Float64Array(depth); // offset within the slot's file
    const fileOfSlot = new Int32Array(depth);
    // --verify: each slot's block, and its offset in the job's space (for its generation).
    const v = verifierOf(plan);
    const blocks = v && Array.from({ length: depth }, (_, i) => ring.buffer(i));
    const jobOffsets = new Float64Array(depth);
    const inKernel = new Uint8Array(depth); // 1 while the slot's I/O is submitted
    const free = new Int32Array(depth);
    for (let i = 0; i < depth; i++) free[i] = depth - 1 - i;
    let nFree = depth;
    let inFlight = 0;
    let pending = -1; // a prepared slot the kernel refused for now (EAGAIN)
    let issuing = true;
    const paced = rt.paced;
    const fail = (syscall: string, errno: number, slot: number, detail?: string): never => {
      throw new SyscallFailure(
        syscall,
        errno,
        files.paths[fileOfSlot[slot]!]!,
        offsets[slot]!,
        detail,
      );
    };

    while (issuing || inFlight > 0 || pending >= 0) {
      // Under a rate: ms to reap for before the next intended start (0: no such wait).
      let reapForMs = 0;
      // Submit each I/O as soon as a slot is free, one io_submit per I/O, as
      // fio does by default (iodepth_batch_submit=1): batching refills behind
      // a large reap lowers the depth the device sees.
      while (pending >= 0 || (issuing && nFree > 0)) {
        let slot = pending;
        if (slot >= 0) {
          pending = -1;
        } else {
          if (paced && inFlight > 0) {
            const wait = rt.untilDue(monoNow());
            if (wait > PACE_EARLY_MS) {
              reapForMs = wait - PACE_EARLY_MS;
              break;
            }
          }
          const now = monoNow();
          if (!rt.mayIssue(now)) {
            issuing = false;
            break;
          }
          slot = free[--nFree]!;
          const read = rt.nextIsRead();
          const off = rt.nextOffset();
          const f = files.fileOf(off);
          const where = files.offsetIn(off);
          isRead[slot] = read ? 1 : 0;
          offsets[slot] = where;
          fileOfSlot[slot] = f;
          ring.prepare(slot, files.fds[f]!, !read, where, bs);
          prepAt[slot] = now;
          jobOffsets[slot] = off;
          if (blocks !== undefined && !read) v!.prepareWrite(blocks[slot]!, where, off);
        }
        // io_submit itself can block (buffered I/O, a FUSE mount): the watchdog sees it.
        rt.busy(prepAt[slot]!, isRead[slot] === 1, fileOfSlot[slot]!, offsets[slot]!);
        const rc = ring.submitOne(slot);
        rt.idle();
        if (rc === 1) {
          submitAt[slot] = monoNow();
          inKernel[slot] = 1;
          inFlight++;
          continue;
        }
        if ((rc === -EAGAIN || rc === -EINTR || rc === 0) && inFlight > 0) {
          pending = slot; // retry once completions have freed kernel resources
          break;
        }
        fail("io_submit", rc < 0 ? -rc : EAGAIN, slot);
      }
      if (inFlight === 0) continue;
      // Reap at least one completion (all that are ready, up to depth); under a rate
      // with a slot free, only until the next intended start.
      const timed = reapForMs > 0 && reapForMs * 1e6 < REAP_TIMEOUT_NS;
      if (timed) setTimespec(this.#untilDue, reapForMs * 1e6);
      const n = ring.reap(timed ? this.#untilDue : this.#timeout);
      const t = monoNow();
      if (n < 0) {
        if (n === -EINTR) continue;
        throw new SyscallFailure("io_getevents", -n, files.paths[0]!);
      }
      if (n === 0) {
        if (timed) continue; // the next intended start has come
        // Nothing completed within REAP_TIMEOUT_NS: show the watchdog the oldest I/O in flight.
        let oldest = -1;
        for (let s = 0; s < depth; s++) {
          if (inKernel[s] === 1 && (oldest < 0 || submitAt[s]! < submitAt[oldest]!)) oldest = s;
        }
        if (oldest >= 0) {
          rt.busy(submitAt[oldest]!, isRead[oldest] === 1, fileOfSlot[oldest]!, offsets[oldest]!);
        }
        continue;
      }
      rt.idle();
      for (let e = 0; e < n; e++) {
        const slot = ring.eventSlot(e);
        const res = ring.eventResult(e);
        const read = isRead[slot] === 1;
        if (res !== bs) {
          fail(
            read ? "pread (libaio)" : "pwrite (libaio)",
            res < 0 ? -res : 0,
            slot,
            res < 0 ? undefined : `(short ${read ? "read" : "write"}: ${res} of ${bs})`,
          );
        }
        rt.complete(read, t, (t - prepAt[slot]!) * 1e6, (submitAt[slot]! - prepAt[slot]!) * 1e6);
        if (blocks !== undefined && read) {
          v!.checkRead(
            blocks[slot]!,
            files.paths[fileOfSlot[slot]!]!,
            offsets[slot]!,
            jobOffsets[slot]!,
          );
        }
        inKernel[slot] = 0;
        free[nFree++] = slot;
      }
      inFlight -= n;
    }
    if (plan.endFsync) {
      rt.busy(monoNow(), false, -1, -1);
      rt.recordFsync(files.fsyncAll());
      rt.idle();
    }
  }

  close(): void {
    this.#ring.close();
    this.#files.close();
  }
}
