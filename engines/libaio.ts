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
 * @module
 */

import type { JobPlan } from "../core/job_protocol.ts";
import { type AlignedBuffer, allocAligned, freeAligned, monoNow } from "../core/libc.ts";
import {
  IO_CMD_PREAD,
  IO_CMD_PWRITE,
  IO_EVENT,
  IO_EVENT_SIZE,
  IOCB,
  IOCB_SIZE,
  libaio,
} from "./libaio_abi.ts";
import { fillRandom, JobFiles } from "./_file.ts";
import { verifierOf } from "../core/verify.ts";
import { type JobEngine, type JobRuntime, SyscallFailure } from "./types.ts";

/** How long io_getevents waits before looking at the stop flag again. */
const REAP_TIMEOUT_NS = 100_000_000;
const EAGAIN = 11;
/** One, as the BigInt the fast FFI path wants for a 64-bit count. */
const ONE = 1n;
const EINTR = 4;

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
  readonly #ctx: Deno.PointerObject;
  readonly #bufs: AlignedBuffer;
  /** `iodepth` iocbs, one per slot, in C memory so their addresses never move. */
  readonly #iocbs: AlignedBuffer;
  readonly #iocbView: DataView;
  /** For each slot, a one-entry array holding its iocb's address, for io_submit. */
  readonly #slotPtrs: Uint8Array<ArrayBuffer>[];
  readonly #depthBig: bigint;
  readonly #events: Uint8Array<ArrayBuffer>;
  readonly #eventView: DataView;
  readonly #timeout: Uint8Array<ArrayBuffer>;

  private constructor(
    plan: JobPlan,
    files: JobFiles,
    ctx: Deno.PointerObject,
    bufs: AlignedBuffer,
  ) {
    this.#plan = plan;
    this.#files = files;
    this.#ctx = ctx;
    this.#bufs = bufs;
    const depth = plan.iodepth;
    this.#iocbs = allocAligned(depth * IOCB_SIZE, IOCB_SIZE);
    this.#iocbView = new DataView(this.#iocbs.bytes.buffer);
    this.#iocbs.bytes.fill(0);
    this.#slotPtrs = [];
    this.#depthBig = BigInt(depth);
    this.#events = new Uint8Array(depth * IO_EVENT_SIZE);
    this.#eventView = new DataView(this.#events.buffer);
    this.#timeout = new Uint8Array(16);
    const tv = new DataView(this.#timeout.buffer);
    tv.setBigInt64(0, BigInt(Math.floor(REAP_TIMEOUT_NS / 1e9)), true);
    tv.setBigInt64(8, BigInt(REAP_TIMEOUT_NS % 1e9), true);
    const iocbBase = this.#iocbs.address;
    for (let slot = 0; slot < depth; slot++) {
      const at = slot * IOCB_SIZE;
      const addr = iocbBase + BigInt(at);
      const ptr = new Uint8Array(8);
      new DataView(ptr.buffer).setBigUint64(0, addr, true);
      this.#slotPtrs.push(ptr);
      // Fixed per slot: the slot index comes back in io_event.data.
      this.#iocbView.setBigUint64(at + IOCB.data, BigInt(slot), true);
      this.#iocbView.setBigUint64(at + IOCB.buf, bufs.address + BigInt(slot * plan.bs), true);
      this.#iocbView.setBigUint64(at + IOCB.nbytes, BigInt(plan.bs), true);
    }
  }

  /** Opens the job's file, lays it out, and sets up the kernel AIO context. */
  static open(plan: JobPlan): LibaioEngine {
    const aio = libaio();
    const files = JobFiles.open(plan);
    let bufs: AlignedBuffer | undefined;
    try {
      files.layOut();
      bufs = allocAligned(plan.iodepth * plan.bs, plan.alignment);
      if (plan.verify) verifierOf(plan)!.fillPattern(bufs.bytes);
      else fillRandom(bufs.bytes, plan.seed ^ 0xa5a5 ^ plan.job);
      const out = new BigUint64Array(1);
      const rc = aio.io_setup(plan.iodepth, new Uint8Array(out.buffer));
      if (rc < 0) {
        throw new SyscallFailure(
          "io_setup",
          -rc,
          files.paths[0]!,
          undefined,
          `(depth ${plan.iodepth})`,
        );
      }
      const ctx = Deno.UnsafePointer.create(out[0]!);
      if (ctx === null) throw new SyscallFailure("io_setup", 22, files.paths[0]!);
      return new LibaioEngine(plan, files, ctx, bufs);
    } catch (e) {
      files.close();
      if (bufs) freeAligned(bufs);
      throw e;
    }
  }

  run(rt: JobRuntime): void {
    const aio = libaio();
    const plan = this.#plan;
    const depth = plan.iodepth;
    const bs = plan.bs;
    const iocb = this.#iocbView;
    const ev = this.#eventView;
    const ctx = this.#ctx;
    const files = this.#files;
    const slotPtrs = this.#slotPtrs;
    const prepAt = new Float64Array(depth);
    const submitAt = new Float64Array(depth);
    const isRead = new Uint8Array(depth);
    const offsets = new Float64Array(depth); // offset within the slot's file
    const fileOfSlot = new Int32Array(depth);
    // --verify: each slot's block, and its offset in the job's space (for its generation).
    const v = verifierOf(plan);
    const blocks = v &&
      Array.from({ length: depth }, (_, i) => this.#bufs.bytes.subarray(i * bs, (i + 1) * bs));
    const jobOffsets = new Float64Array(depth);
    const inKernel = new Uint8Array(depth); // 1 while the slot's I/O is submitted
    const free = new Int32Array(depth);
    for (let i = 0; i < depth; i++) free[i] = depth - 1 - i;
    let nFree = depth;
    let inFlight = 0;
    let pending = -1; // a prepared slot the kernel refused for now (EAGAIN)
    let issuing = true;
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
      // Submit each I/O as soon as a slot is free, one io_submit per I/O, as
      // fio does by default (iodepth_batch_submit=1): batching refills behind
      // a large reap lowers the depth the device sees.
      while (pending >= 0 || (issuing && nFree > 0)) {
        let slot = pending;
        if (slot >= 0) {
          pending = -1;
        } else {
          const now = monoNow();
          if (!rt.mayIssue(now)) {
            issuing = false;
            break;
          }
          slot = free[--nFree]!;
          const at = slot * IOCB_SIZE;
          const read = rt.nextIsRead();
          const off = rt.nextOffset();
          const f = files.fileOf(off);
          const where = files.offsetIn(off);
          isRead[slot] = read ? 1 : 0;
          offsets[slot] = where;
          fileOfSlot[slot] = f;
          iocb.setInt32(at + IOCB.fildes, files.fds[f]!, true);
          iocb.setInt16(at + IOCB.opcode, read ? IO_CMD_PREAD : IO_CMD_PWRITE, true);
          iocb.setUint32(at + IOCB.offset, where % 4294967296, true);
          iocb.setUint32(at + IOCB.offset + 4, Math.floor(where / 4294967296), true);
          prepAt[slot] = now;
          jobOffsets[slot] = off;
          if (blocks !== undefined && !read) v!.prepareWrite(blocks[slot]!, where, off);
        }
        // io_submit itself can block (buffered I/O, a FUSE mount): the watchdog sees it.
        rt.busy(prepAt[slot]!, isRead[slot] === 1, fileOfSlot[slot]!, offsets[slot]!);
        const rc = aio.io_submit(ctx, ONE, slotPtrs[slot]!);
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
      // Reap at least one completion (all that are ready, up to depth).
      const n = aio.io_getevents(ctx, ONE, this.#depthBig, this.#events, this.#timeout);
      const t = monoNow();
      if (n < 0) {
        if (n === -EINTR) continue;
        throw new SyscallFailure("io_getevents", -n, files.paths[0]!);
      }
      if (n === 0) {
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
        const at = e * IO_EVENT_SIZE;
        const slot = ev.getUint32(at + IO_EVENT.data, true);
        // res is a long; transfers < 2 GiB and -errno fit in its low 32 bits.
        const res = ev.getInt32(at + IO_EVENT.res, true);
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
    libaio().io_destroy(this.#ctx);
    this.#files.close();
    freeAligned(this.#bufs);
    freeAligned(this.#iocbs);
  }
}
